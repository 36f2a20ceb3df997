"""The real program (`python -m reference_driver`) in host mode: flags, start-up order, GetInfo over the
registration socket, clean SIGTERM (sockets removed), and clear errors for bad flags. The API server is
unreachable here (unit test); the e2e module runs it against the local cluster."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import grpc
import pytest

from reference_driver import DRIVER_NAME
from reference_driver.config import ConfigError, from_args
from reference_driver.plugin import wire
from tests.reference_driver.helpers import rmtree, short_tmpdir

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.fixture
def root():
    path = short_tmpdir()
    yield path
    rmtree(path)


def argv(root, *extra):
    (root / "kubeconfig").write_text(KUBECONFIG)
    return [
        "--node-name",
        "n1",
        "--kubeconfig",
        str(root / "kubeconfig"),
        "--plugin-registry-dir",
        str(root / "r"),
        "--plugins-dir",
        str(root / "p"),
        "--cdi-dir",
        str(root / "cdi"),
        "--state-dir",
        str(root / "s"),
        *extra,
    ]


def test_process_serves_registration_and_stops_cleanly(root):
    proc = subprocess.Popen([sys.executable, "-m", "reference_driver", *argv(root)], stderr=subprocess.PIPE, text=True)
    reg = root / "r" / f"{DRIVER_NAME}-reg.sock"
    try:
        deadline = time.monotonic() + 20
        while not reg.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert reg.is_socket(), f"registration socket never appeared (exit {proc.poll()})"
        m = wire.registration()
        with grpc.insecure_channel(f"unix://{reg}") as ch:
            info = ch.unary_unary(
                f"/{m.SERVICE}/GetInfo",
                request_serializer=m.InfoRequest.SerializeToString,
                response_deserializer=m.PluginInfo.FromString,
            )(m.InfoRequest(), timeout=5)
        assert info.endpoint == str(root / "p" / DRIVER_NAME / "dra.sock")
        assert (root / "p" / DRIVER_NAME / "dra.sock").is_socket(), "DRA socket must exist before registration"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert not reg.exists() and not (root / "p" / DRIVER_NAME / "dra.sock").exists()


def test_bad_flags_exit_2_with_a_clear_message(root):
    proc = subprocess.run(
        [sys.executable, "-m", "reference_driver", *argv(root, "--faults", "nope")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "unknown fault(s) ['nope']" in proc.stderr


def test_config_reads_env_fallbacks(root):
    cfg = from_args(
        argv(root)[2:] + ["--faults", "no-slices"], env={"NODE_NAME": "n2", "DRA_REFERENCE_FAULTS": "prepare-error"}
    )
    assert cfg.node_name == "n2" and cfg.faults.enabled == {"no-slices", "prepare-error"}
    with pytest.raises(ConfigError, match="--node-name is required"):
        from_args(argv(root)[2:], env={})
