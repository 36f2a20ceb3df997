"""Test network interfaces and the NRI hand-off of local nodes (dranet): names unique to the node, ``ip``
command lines, containerd's per-node NRI section, the plugin's mount namespace. Real ``ip`` links only in the
root-only test at the end, inside network namespaces of its own (skipped without CAP_NET_ADMIN)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tomllib

import pytest
from conformance_lab.local import netdevs, netns
from conformance_lab.local.config import LocalClusterConfig, layout_for
from conformance_lab.local.node_config import containerd_config, node_paths
from conformance_lab.local.processes import HostProcess


def _np(i: int = 1, name: str = "t"):
    return node_paths(layout_for(LocalClusterConfig(name=name, nodes=2, nri=True).validate()), i)


def test_names_are_unique_per_node_and_cluster_and_fit_ifnamsiz():
    names = netdevs.names("c1a2b", "c1a2b-node-0", 4)
    assert names == [f"{netdevs.prefix('c1a2b', 'c1a2b-node-0')}-{k}" for k in range(4)]
    assert all(len(n) <= 15 and n.startswith("dn") for n in names)
    others = netdevs.names("c1a2b", "c1a2b-node-1", 4) + netdevs.names("c9999", "c1a2b-node-0", 4)
    assert not set(names) & set(others)
    assert len(netdevs.names("c", "n", 99)[-1]) <= 15


@pytest.mark.parametrize("count", [0, 100, True, "4"])
def test_count_out_of_range_is_refused(count):
    with pytest.raises(ValueError, match="out of range"):
        netdevs.names("c", "n", count)


def test_add_argv_of_ifb_and_veth_and_refusals():
    assert netdevs.add_argv("ifb", "dnabcdef-0") == ["ip", "link", "add", "dnabcdef-0", "type", "ifb"]
    veth = netdevs.add_argv("veth", "dnabcdef-1")
    assert veth[-4:] == ["veth", "peer", "name", "dnabcdef" + "p1"] and not veth[-1].startswith("dnabcdef-")
    with pytest.raises(ValueError, match="no dummy here"):
        netdevs.add_argv("dummy", "dnabcdef-0")
    with pytest.raises(ValueError, match="longer than 15"):
        netdevs.add_argv("ifb", "x" * 16)


def test_containerd_nri_section_is_per_node_and_off_by_default(tmp_path):
    np = _np()
    for nri, disabled in ((True, False), (False, True)):
        text = _rendered(np, nri, tmp_path)
        section = tomllib.loads(text)["plugins"]["io.containerd.nri.v1.nri"]
        assert section["disable"] is disabled
        if nri:
            assert section["socket_path"] == str(np.run_dir / "nri" / "nri.sock") == str(np.nri_dir / "nri.sock")
            assert section["plugin_path"].startswith(str(np.dir)) and section["plugin_config_path"].startswith(
                str(np.dir)
            )
    assert tomllib.loads(_rendered(_np(0), True, tmp_path))["plugins"]["io.containerd.nri.v1.nri"][
        "socket_path"
    ] != str(np.nri_dir / "nri.sock")


def _rendered(np, nri, tmp_path):
    """containerd_config writes into the node dir: render it for a copy of ``np`` under ``tmp_path``."""
    local = dataclasses.replace(np, dir=tmp_path / np.name, run_dir=np.run_dir)
    local.dir.mkdir(parents=True, exist_ok=True)
    text = containerd_config(local, "/usr/sbin/runc", "/usr/lib/cni", "pause:1", nri=nri).read_text()
    return text.replace(str(local.dir), str(np.dir))


def test_nri_plugin_runs_where_the_default_socket_is_its_nodes():
    np = _np()
    argv = netdevs.nri_plugin_argv(np, ["/bin/dranet", "--filter", 'a in ["x"]'])
    assert argv[:5] == ["unshare", "--mount", "--propagation", "slave", "--"]
    script = argv[7]
    assert f"mount --bind {np.nri_dir} /run/nri" in script and "mount -t tmpfs" in script
    assert script.endswith('exec "$@"') and argv[-3:] == ["/bin/dranet", "--filter", 'a in ["x"]']


@pytest.mark.skipif(os.geteuid() != 0, reason="creating links needs root (CAP_NET_ADMIN)")
def test_ifb_links_are_created_in_the_nodes_namespace_recorded_and_removed(tmp_path, monkeypatch):
    """Real links: created up inside each node's network namespace (none on the host), recorded before
    creation, all removed (veth peers too)."""
    state = _State(tmp_path)
    lay = layout_for(LocalClusterConfig(name="t", nodes=1).validate())
    for node in ("n", "m"):
        state.processes.append(
            HostProcess.spawn(netns.NODE_HOLDER, node, netns.node_holder_argv(lay, 0), tmp_path / node)
        )
    try:
        for p in state.processes:
            netns.wait_holder(p)
        made = netdevs.create(state, "n", "ifb", 2) + netdevs.create(state, "m", "veth", 1)
        inside = {node: netns.in_node(state.processes, node, []) for node in ("n", "m")}
        assert netdevs.present(made[:2], inside["n"]) == made[:2] and netdevs.present(made) == []
        assert netdevs.present(made[2:], inside["m"]) == sorted(made[2:] + [netdevs.peer(made[-1])])
        assert state.host["netdevs"] == {"n": made[:2], "m": made[2:]} and state.saved
        up = subprocess.run([*inside["n"], "ip", "-o", "link", "show", made[0]], capture_output=True, text=True)
        assert "UP" in up.stdout
        left = netdevs.remove(state)
        assert left == [] and netdevs.present(made[:2], inside["n"]) == [] and state.host["netdevs"] == {}
    finally:
        for p in state.processes:
            p.stop(timeout=2)


class _State:
    """A ClusterState stand-in: name, host record, save()."""

    def __init__(self, tmp_path):
        self.name, self.host, self.saved, self.processes = f"u{os.getpid() % 100000}", {}, 0, []
        self.path = tmp_path / "state.json"

    def save(self):
        self.saved += 1
