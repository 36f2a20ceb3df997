"""daemonset_paths: each node's directories at the standard paths inside a mount namespace of its own."""

from __future__ import annotations

from pathlib import Path

from conformance_lab.local import node_mounts
from conformance_lab.local.config import LocalClusterConfig, layout_for
from conformance_lab.local.node_config import node_paths


def _np(i: int = 1):
    return node_paths(layout_for(LocalClusterConfig(name="t", nodes=2, daemonset_paths=True).validate()), i)


def test_bind_mounts_put_the_nodes_kubelet_root_and_cdi_dir_at_the_standard_paths():
    np = _np()
    pairs = node_mounts.bind_mounts(np)
    assert (np.kubelet_root, Path("/var/lib/kubelet")) in pairs
    targets = {dst for src, dst in pairs if src == np.cdi_dir}
    assert Path("/etc/cdi") in targets
    assert Path("/var/run/cdi").parent.resolve() / "cdi" in targets  # /var/run -> /run resolved


def test_holder_is_a_slave_mount_namespace_that_binds_every_pair_then_sleeps():
    np = _np()
    argv = node_mounts.holder_argv(np)
    assert argv[:5] == ["unshare", "--mount", "--propagation", "slave", "--"]
    script = argv[-1]
    for src, dst in node_mounts.bind_mounts(np):
        assert f"mount --bind {src} {dst}" in script
    assert script.startswith("set -e;") and script.endswith("exec sleep infinity")


def test_enter_runs_the_command_in_the_holders_namespace():
    assert node_mounts.enter(42, ["kubelet", "--v=1"]) == [
        "nsenter",
        "--mount=/proc/42/ns/mnt",
        "--",
        "kubelet",
        "--v=1",
    ]


def test_mount_points_of_a_gone_process_is_empty():
    assert node_mounts.mount_points_of(2**22 + 7) == set()


def test_daemonset_paths_is_off_by_default():
    assert LocalClusterConfig().daemonset_paths is False


def test_kubelet_root_dir_is_the_standard_path_inside_the_namespace():
    argv = ["kubelet", "--config=c", "--root-dir=/var/lib/dra-conformance/clusters/t/node-1/kubelet", "--v=1"]
    assert node_mounts.kubelet_argv(argv) == ["kubelet", "--config=c", "--root-dir=/var/lib/kubelet", "--v=1"]
