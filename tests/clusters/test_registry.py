"""The lab's loopback registries with real parts: the distribution registry built by `make setup` (versions.toml
``[go.registry]``), `dra-conformance images push` of a cached archive into it, helm pushing and reading an OCI
chart there, and a classic chart repository (``helm repo index`` + the HTTP thread). Each test checks that the
registry process, its port and its storage are gone afterwards. A few seconds each."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conformance_lab.registry import push, server
from conformance_lab.toolchain import cache
from conformance_lab.toolchain.images import catalog
from conformance_lab.toolchain.images.oci import verify_archive

from conformance.images import reference_driver_chart

REPO = Path(__file__).resolve().parents[2]


def _binary(name: str) -> Path:
    try:
        return cache.tool_binary(name)
    except cache.CacheMiss as err:
        pytest.skip(f"{name} binary not built yet: {err}")


def _port_closed(host: str) -> bool:
    addr, port = host.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((addr, int(port))) != 0


def _helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(_binary("helm")), *args], capture_output=True, text=True, timeout=120)


def test_images_push_stores_the_archive_manifest_and_nothing_outlives_the_registry():
    # given: a running loopback registry and the cached busybox archive
    archive = catalog.select(["busybox"])[0].build()
    with server.running_registry(_binary("registry")) as reg:
        # when: `dra-conformance images push` pushes it (twice: the second finds every blob there)
        argv = [sys.executable, "-m", "conformance.cli", "images", "push", "busybox", "--registry", f"{reg.host}/dra"]
        runs = [subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO) for _ in range(2)]
        digest = push.manifest_digest(f"{reg.host}/dra/busybox:1")
        with urllib.request.urlopen(f"{reg.url}/v2/dra/busybox/tags/list", timeout=10) as resp:
            tags = json.load(resp)
        storage = reg.root
    # then: both pushes named the target, the registry serves the archive's own manifest, and it is all gone
    assert all(r.returncode == 0 and f"{reg.host}/dra/busybox:1" in r.stdout for r in runs), runs
    assert digest == verify_archive(archive).digest, (digest, archive)
    assert tags == {"name": "dra/busybox", "tags": ["1"]}, tags
    assert reg.proc.poll() is not None and not storage.exists() and _port_closed(reg.host), reg.host


def test_images_push_refuses_a_registry_with_a_scheme():
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "images", "push", "--registry", "http://127.0.0.1:5000"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert proc.returncode == 4 and "HOST[:PORT][/PREFIX]" in proc.stderr, proc.stderr


def test_helm_pushes_and_reads_an_oci_chart_on_the_loopback_registry(tmp_path):
    # given: the reference driver's chart packaged, and a running registry
    packaged = _helm("package", str(reference_driver_chart()), "--destination", str(tmp_path))
    assert packaged.returncode == 0, packaged.stderr
    tgz = next(tmp_path.glob("*.tgz"))
    with server.running_registry(_binary("registry")) as reg:
        # when: helm pushes it and reads it back by oci:// reference and version
        pushed = _helm("push", str(tgz), f"oci://{reg.host}/charts", "--plain-http")
        version = tgz.stem.rsplit("-", 1)[1]
        shown = _helm("show", "chart", f"oci://{reg.host}/charts/{tgz.stem.rsplit('-', 1)[0]}", "--version",
                      version, "--plain-http")  # fmt: skip
    # then: the chart came back from the registry
    assert pushed.returncode == 0, pushed.stderr
    assert shown.returncode == 0 and f"version: {version}" in shown.stdout, shown.stderr


def test_classic_chart_repository_serves_its_index_and_chart_then_closes(tmp_path):
    # given: a chart repository directory made by helm package + helm repo index
    assert _helm("package", str(reference_driver_chart()), "--destination", str(tmp_path)).returncode == 0
    name = next(tmp_path.glob("*.tgz")).stem.rsplit("-", 1)[0]
    with server.chart_repository(tmp_path) as url:
        assert _helm("repo", "index", str(tmp_path), "--url", url).returncode == 0
        # when: helm reads the chart by name from the repository URL
        shown = _helm("show", "chart", name, "--repo", url)
    # then: it was served, and the server's port is closed afterwards
    assert shown.returncode == 0 and f"name: {name}" in shown.stdout, shown.stderr
    assert _port_closed(url.removeprefix("http://")), url
