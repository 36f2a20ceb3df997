"""Pre-flight checks: a port in use and missing binaries are reported with the fix."""

import socket

import pytest
from conformance_lab.local import preflight


def test_port_in_use_is_reported_with_the_component():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        problems = preflight.check_ports({"kube-apiserver": port})
    assert len(problems) == 1 and f"port {port} (for kube-apiserver) is in use" in problems[0]


def test_free_port_is_not_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert preflight.check_ports({"x": port}) == []


def test_missing_binaries_name_make_setup_with_the_version(tmp_path, monkeypatch):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    with pytest.raises(preflight.PreflightError) as err:
        preflight.run("v1.35.4", {})
    text = str(err.value)
    assert "make setup K8S_VERSION=1.35" in text
    assert "kube-apiserver" in text and "containerd" in text


def test_cgroup_layout_is_detected():
    assert preflight.cgroup_layout() in ("v1", "v2")
