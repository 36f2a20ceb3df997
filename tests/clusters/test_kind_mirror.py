"""kind nodes pulling through the lab registry (conformance_lab.kind.mirror), the parts that need no cluster: the
kind config's containerd patch and mounts, the hosts.toml tree, and the clean-up of the forwarder and the tree."""

from __future__ import annotations

import json
import tomllib

import pytest
from conformance_lab.kind import mirror
from conformance_lab.kind import provider as kind
from conformance_lab.local.node_config import MIRRORED_HOSTS
from conformance_lab.local.processes import HostProcess

from conformance.core.errors import ConfigError


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
