"""Long unix socket paths are dialed through /proc/self/fd; advertised /var/lib/kubelet paths map to the node."""

from __future__ import annotations

import os
import socket
import types
from pathlib import Path

from conformance_lab.local.node_access import host_path

from conformance.node import unixsock


def test_short_paths_are_dialed_as_they_are():
    with unixsock.target("/run/x.sock") as t:
        assert t == "unix:///run/x.sock"


def test_a_socket_path_over_the_limit_is_reachable_through_its_directory_fd(tmp_path):
    d = tmp_path / ("d" * 60) / ("e" * 40)
    d.mkdir(parents=True)
    path = d / "gpu.example.com-b8706c00-9891-4ee9-b292-70f87f3139a9-reg.sock"
    server = socket.socket(socket.AF_UNIX)
    old = os.getcwd()
    os.chdir(d)
    try:
        server.bind(path.name)  # bound relative: the absolute path is too long for bind()
    finally:
        os.chdir(old)
    server.listen(1)
    with unixsock.target(path) as t:
        assert t.startswith("unix:///proc/self/fd/") and len(t) < 108
        client = socket.socket(socket.AF_UNIX)
        client.connect(t.removeprefix("unix://"))
        client.close()
    server.close()


def test_advertised_standard_kubelet_paths_map_to_the_nodes_kubelet_dir():
    node = types.SimpleNamespace(kubelet_root_dir=Path("/var/lib/dra-conformance/clusters/c/node-0/kubelet"))
    assert host_path(node, "/var/lib/kubelet/plugins/d/dra.sock") == f"{node.kubelet_root_dir}/plugins/d/dra.sock"
    assert host_path(node, "/elsewhere/dra.sock") == "/elsewhere/dra.sock"
    real = types.SimpleNamespace(kubelet_root_dir=Path("/var/lib/kubelet"))
    assert host_path(real, "/var/lib/kubelet/plugins/d/dra.sock") == "/var/lib/kubelet/plugins/d/dra.sock"
