"""KindNodeAccess dials the driver's DRA plugin socket through the kind node container's root."""

import os
from pathlib import Path

import pytest
from conformance_lab.kind.node_access import KindNodeAccess

from conformance.node import draplugin

INFO = [
    {
        "type": "DRAPlugin",
        "name": "gpu.example.com",
        "endpoint": "/var/lib/kubelet/plugins/gpu.example.com/dra.sock",
        "supported_versions": ["v1.DRAPlugin"],
    }
]


def access(monkeypatch, root: str) -> KindNodeAccess:
    kind = KindNodeAccess(["n1"], cli="nerdctl")
    monkeypatch.setattr(kind, "_root", lambda node: Path(root))
    monkeypatch.setattr(kind, "plugin_info", lambda node: INFO)
    return kind


def test_dra_plugin_socket_is_the_advertised_endpoint_under_the_node_root(monkeypatch):
    client = access(monkeypatch, "/proc/4242/root").dra_plugin("n1", "gpu.example.com")
    assert isinstance(client, draplugin.DraPluginClient)
    assert str(client.socket) == "/proc/4242/root/var/lib/kubelet/plugins/gpu.example.com/dra.sock"


def test_a_socket_path_too_long_for_a_unix_address_is_dialled_through_a_short_link(monkeypatch):
    root = "/proc/4242/root/" + "x" * 80
    client = access(monkeypatch, root).dra_plugin("n1", "gpu.example.com")
    assert len(client.socket) < 60 and os.readlink(client.socket) == root + INFO[0]["endpoint"]


def test_an_unregistered_driver_is_a_plugin_error(monkeypatch):
    with pytest.raises(draplugin.DraPluginError, match="other.example.com"):
        access(monkeypatch, "/proc/4242/root").dra_plugin("n1", "other.example.com")
