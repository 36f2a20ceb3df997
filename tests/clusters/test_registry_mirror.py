"""A local cluster's nodes pulling through a loopback registry: containerd's hosts.toml mirrors and its config."""

from __future__ import annotations

import tomllib

import pytest
from conformance_lab.local.config import LocalClusterConfig
from conformance_lab.local.node_config import MIRRORED_HOSTS, NodePaths, containerd_config

from conformance.core.errors import ConfigError


def test_containerd_pulls_every_mirrored_host_and_the_registry_itself_only_from_the_mirror(tmp_path):
    np = NodePaths(0, "mirr-node-0", tmp_path / "node", tmp_path / "run")
    np.dir.mkdir()
    written = containerd_config(np, "runc", "/cni", "dra-conformance.local/pause:1", mirror="127.0.0.1:5555")
    conf = tomllib.loads(written.read_text())
    certs = conf["plugins"]["io.containerd.cri.v1.images"]["registry"]["config_path"]
    for host in (*MIRRORED_HOSTS, "127.0.0.1:5555"):
        hosts = tomllib.loads((np.dir / "certs.d" / host / "hosts.toml").read_text())
        assert hosts["server"] == "http://127.0.0.1:5555", (host, hosts)
        assert hosts["host"]["http://127.0.0.1:5555"]["capabilities"] == ["pull", "resolve"], hosts
    assert certs == str(np.dir / "certs.d")
    plain = tomllib.loads(containerd_config(np, "runc", "/cni", "p:1").read_text())
    assert "registry" not in plain["plugins"]["io.containerd.cri.v1.images"], "no mirror: no registry config"


def test_a_mirror_that_is_not_a_loopback_host_port_is_refused():
    with pytest.raises(ConfigError, match="registry_mirror"):
        LocalClusterConfig(registry_mirror="registry.example.com:5000").validate()
