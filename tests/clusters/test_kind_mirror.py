"""kind nodes pulling through the lab registry (conformance_lab.kind.mirror), the parts that need no cluster: the
kind config's containerd patch and mounts, the hosts.toml tree, and the clean-up of the forwarder and the tree."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import tomllib

import pytest
from conformance_lab.kind import mirror
from conformance_lab.kind import provider as kind
from conformance_lab.local.node_config import MIRRORED_HOSTS
from conformance_lab.local.processes import HostProcess

from conformance.core.config import RunConfig
from conformance.core.errors import ConfigError
from conformance.core.handles import ProviderContext


@pytest.fixture
def mirrors(tmp_path, monkeypatch):
    monkeypatch.setattr(mirror, "MIRRORS", tmp_path / "mirrors")
    return tmp_path / "mirrors"


def test_every_node_mounts_the_hosts_tree_and_containerd_reads_it(mirrors):
    config, _, _ = kind.kind_config("dra-m", "v1.34.4", "all", 2)
    certs = mirror.configure(config, "dra-m", "127.0.0.1:5555")
    assert certs == mirrors / "dra-m" / "certs.d"
    patch = tomllib.loads(config["containerdConfigPatches"][-1])
    assert patch["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["config_path"] == mirror.CERTS_D
    assert "enable_cdi = true" in config["containerdConfigPatches"][0], "the CDI patch stays"
    wanted = {"hostPath": str(certs), "containerPath": mirror.CERTS_D, "readOnly": True}
    assert [n["extraMounts"] for n in config["nodes"]] == [[wanted]] * 3
    for host in (*MIRRORED_HOSTS, "127.0.0.1:5555"):
        hosts = tomllib.loads((certs / host / "hosts.toml").read_text())
        assert hosts["server"] == "http://127.0.0.1:5555" and list(hosts["host"]) == ["http://127.0.0.1:5555"]


@pytest.mark.parametrize("bad", ["registry.example.com:5000", "localhost:5000", "127.0.0.1", "10.0.0.1:5000"])
def test_a_mirror_that_is_not_a_loopback_address_and_port_is_refused(bad, mirrors):
    config, _, _ = kind.kind_config("dra-m", "v1.34.4", "all", 1)
    with pytest.raises(ConfigError, match="127.x.y.z:PORT"):
        mirror.configure(config, "dra-m", bad)
    assert not mirrors.exists(), "nothing written for a refused mirror"


def test_stop_ends_the_recorded_forwarder_and_removes_the_tree(mirrors, tmp_path):
    config, _, _ = kind.kind_config("dra-m", "v1.34.4", "all", 1)
    mirror.configure(config, "dra-m", "127.0.0.1:5555")
    proc = HostProcess.spawn(mirror.FORWARDER, "dra-m", ["sleep", "300"], tmp_path / "fwd.log")
    (mirrors / "dra-m" / "netfwd.json").write_text(json.dumps(proc.to_dict()))
    done = mirror.stop("dra-m")
    assert not proc.is_running() and not mirrors.exists(), done
    assert done == [f"process {mirror.FORWARDER} {proc.pid}", f"dir {mirrors / 'dra-m'}"]
    assert mirror.stop("dra-m") == [], "a cluster without a mirror: nothing to undo"


class _Registry(http.server.BaseHTTPRequestHandler):
    """A stand-in registry's HTTP answers: ``GET /v2/`` 200 (or the class's ``root`` code), a manifest for the
    repositories in ``have``, 404 for the others."""

    root, have = 200, set()

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(self.root if self.path == "/v2/" else 404)
        self.end_headers()

    def do_HEAD(self):  # noqa: N802
        repo = self.path.removeprefix("/v2/").partition("/manifests/")[0]
        self.send_response(200 if repo in self.have else 404)
        self.send_header("Docker-Content-Digest", "sha256:" + "0" * 64)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def registry():
    """A loopback HTTP server speaking just enough of the distribution API; yields its handler class (set
    ``root`` / ``have``) and ``127.0.0.1:PORT``."""
    handler = type("Handler", (_Registry,), {"root": 200, "have": set()})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield handler, f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_a_registry_that_does_not_answer_is_refused_naming_the_option_and_the_fix():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=rf"--image-registry: registry 127.0.0.1:{port} is not reachable") as exc:
        mirror.check_registry(f"127.0.0.1:{port}", ["dra-conformance.local/busybox:1"])
    assert "start it first" in str(exc.value)


def test_a_registry_without_the_suites_images_is_refused_naming_images_push(registry):
    handler, host = registry
    handler.have = {"busybox"}
    assert mirror.check_registry(host, ["dra-conformance.local/busybox:1"]) == host
    with pytest.raises(
        ConfigError, match=rf"cannot serve dra-conformance.local/pause:1.*images push --registry {host}"
    ):
        mirror.check_registry(host, ["dra-conformance.local/busybox:1", "dra-conformance.local/pause:1"])
    handler.root = 404
    with pytest.raises(ConfigError, match="HTTP 404, not an OCI registry"):
        mirror.check_registry(host, [])


def test_run_cluster_kind_image_registry_turns_the_mirror_on_and_is_checked_before_kind_starts(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(kind, "_kind", lambda *a, **k: pytest.fail(f"kind ran before the registry check: {a}"))
    cfg = RunConfig(cluster="kind", nodes=1, image_registry=dead, run_id="r-mirror-check")
    provider = kind.KindProvider(ProviderContext(cfg, tmp_path / "kind"))
    assert provider.mirror == dead
    with pytest.raises(ConfigError, match=f"--image-registry: registry {dead} is not reachable"):
        provider.up()
    provider.down()  # the run's tear-down: nothing was started, so no `kind delete` either (_kind fails the test)
    assert not (tmp_path / "kind" / "kind-host-cleanup.txt").exists()
    assert kind.KindProvider(ProviderContext(RunConfig(cluster="kind"), tmp_path)).mirror == ""
    with pytest.raises(ConfigError, match="127.x.y.z:PORT"):
        mirror.check_registry("registry.example.com:5000", [])
