"""Tear-down of a local cluster from its on-disk state, leaving nothing behind: processes (recorded pids and
process groups, containerd shims, container processes in the node cgroups), mounts under the cluster
directories, the network namespaces (netns.py: their links, routes, iptables rules of kube-proxy, the kubelet and
the bridge plugin go with the last process in them), cgroups, kubelet log symlinks, CNI result files, and the
state/run directories. Logs are kept.

Order: host processes (plugins) -> kwok, kube-proxy, scheduler, controller-manager -> kubelets ->
container processes (cgroup kill) -> containerd + shims -> apiserver -> etcd -> any other process naming the
cluster's directories -> mounts -> network ->
cgroups -> directories. Each step collects errors; the last step raises one error listing them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.core.errors import ClusterUnavailable
from conformance_lab.local import hostsys, netdevs, node_mounts
from conformance_lab.local.config import Layout
from conformance_lab.local.node_config import node_paths
from conformance_lab.local.processes import kill_pids, processes_matching, strays
from conformance_lab.local.state import ClusterState, existing_clusters, host_lock

_CONTROL_ORDER = ("kwok", "kube-proxy", "kube-scheduler", "kube-controller-manager")
_LAST = ("kube-apiserver", "etcd")


class TeardownError(ClusterUnavailable):
    """Something survived tear-down; ``leftovers`` lists it."""

    def __init__(self, name: str, leftovers: list[str]) -> None:
        self.leftovers = leftovers
        super().__init__(f"tear-down of local cluster {name!r} left: " + "; ".join(leftovers))


def _layout(state: ClusterState) -> Layout:
    return Layout(name=state.name, slot=state.slot, nodes=state.nodes, log_dir=Path(state.log_dir))


def _stop(state: ClusterState, procs, errors: list[str], timeout: float = 10.0) -> None:
    for proc in procs:
        try:
            proc.stop(timeout=timeout)
        except RuntimeError as exc:
            errors.append(str(exc))


def teardown(state: ClusterState) -> None:
    """Stop and remove everything ``state`` records. Idempotent. Raises TeardownError on leftovers."""
    lay = _layout(state)
    errors: list[str] = []
    state.phase = "stopping"
    components = set(_CONTROL_ORDER) | set(_LAST) | {"kubelet", "containerd"}
    _stop(state, [p for p in reversed(state.processes) if p.name not in components], errors)
    for name in _CONTROL_ORDER:
        _stop(state, [p for p in state.processes if p.name == name], errors)
    _stop(state, [p for p in state.processes if p.name == "kubelet"], errors, timeout=5.0)
    for i in range(lay.nodes):
        survivors = hostsys.kill_cgroup(lay.cgroup_root(i))
        if survivors:
            errors.append(f"container processes of node {i} survived: {sorted(survivors)}")
    _stop(state, [p for p in state.processes if p.name == "containerd"], errors, timeout=5.0)
    for i in range(lay.nodes):
        kill_pids(processes_matching(str(node_paths(lay, i).containerd_socket)))
    hostsys.remove_dead_shim_sockets()
    for name in _LAST:
        _stop(state, [p for p in state.processes if p.name == name], errors)
    kill_pids(strays(lay.state_dir, lay.run_dir))  # unrecorded: started by a bring-up killed before recording
    left = hostsys.unmount_under(lay.state_dir, lay.run_dir)
    if left:
        errors.append(f"mounts could not be removed: {left}")
    _network_cleanup(state, lay)
    kept_links = netdevs.remove(state)
    if kept_links:
        errors.append(f"test interfaces could not be removed: {kept_links}")
    for i in range(lay.nodes):
        stuck = hostsys.remove_cgroup_root(lay.cgroup_root(i))
        if stuck:
            errors.append(f"cgroups could not be removed: {stuck[:5]}")
    _remove_log_links(lay)
    if not _others_running(state.name):
        hostsys.restore_ip_forward()
        errors += [f"sysctl could not be restored: {e}" for e in hostsys.restore_sysctls()]
    if not left:
        for d in (lay.run_dir, lay.state_dir):
            shutil.rmtree(d, ignore_errors=True)
            if d.exists():
                errors.append(f"directory {d} could not be removed")
    else:
        state.phase = "teardown-failed"
        state.save()
    if state.host.get("daemonset_paths"):
        with host_lock():  # after our state is gone: others_use() then sees only the other clusters
            kept = node_mounts.remove_mount_points(state.name)
        if kept:
            errors.append(f"mount points created for daemonset_paths are not empty: {kept}")
    if state.host.get("nri"):
        with host_lock():
            kept = netdevs.remove_nri_mount_point(state.name)
        if kept:
            errors.append(f"the NRI directory created for the nodes' plugins is not empty: {kept}")
    if errors:
        raise TeardownError(state.name, errors)


def _others_running(name: str) -> bool:
    return any(n != name for n in existing_clusters())


def _network_cleanup(state: ClusterState, lay: Layout) -> None:
    networks = [lay.cni_network(i) for i in range(lay.nodes)]
    hostsys.delete_cni_chains(networks)
    results = Path("/var/lib/cni/results")  # libcni's result cache: <network>-<container id>-<ifname>
    if results.is_dir():
        for f in results.iterdir():
            net = next((n for n in networks if f.name.startswith(n + "-")), None)
            if net:  # and containerd's loopback result of the same sandbox (a pod killed here never got CNI DEL)
                sandbox = f.name[len(net) + 1 :].rsplit("-", 1)[0]
                (results / f"cni-loopback-{sandbox}-lo").unlink(missing_ok=True)
                f.unlink(missing_ok=True)
    for i in range(lay.nodes):  # in the node's namespace (gone with it); on the host only after a crash of mkdir
        hostsys.delete_bridge(lay.bridge(i))


def _remove_log_links(lay: Layout) -> None:
    """The kubelet symlinks /var/log/containers/*.log into its podLogsDir; drop links into our dirs."""
    base = Path("/var/log/containers")
    if not base.is_dir():
        return
    prefix = str(lay.state_dir) + "/"
    for link in base.iterdir():
        try:
            if link.is_symlink() and str(link.readlink()).startswith(prefix):
                link.unlink()
        except OSError:
            pass


def leftovers(state_name: str, lay: Layout, bridges: list[str]) -> list[str]:
    """What of cluster ``state_name`` still exists on the host (for tests): processes naming its dirs,
    mounts, bridges, directories, cgroups. Empty when tear-down was complete."""
    found = []
    for d in (lay.state_dir, lay.run_dir):
        pids = processes_matching(str(d))
        if pids:
            found.append(f"processes using {d}: {pids}")
        if d.exists():
            found.append(f"directory {d}")
    mounts = hostsys.mounts_under(lay.state_dir, lay.run_dir)
    if mounts:
        found.append(f"mounts: {mounts[:5]}")
    present = set(hostsys.links())
    found += [f"interface {b}" for b in bridges if b in present]
    for i in range(lay.nodes):
        if hostsys.cgroup_pids(lay.cgroup_root(i)) or any(
            (h / lay.cgroup_root(i).strip("/")).exists() for h in hostsys.cgroup_hierarchies()
        ):
            found.append(f"cgroup {lay.cgroup_root(i)}")
    networks = [lay.cni_network(i) for i in range(lay.nodes)]
    if hostsys.cni_chains_for(networks):
        found.append("CNI iptables chains")
    if f"nat/{hostsys.api_service_chain(state_name)}" in hostsys.iptables_chains(("DRA-API-",)):
        found.append(f"iptables chain {hostsys.api_service_chain(state_name)}")
    results = Path("/var/lib/cni/results")
    if results.is_dir():
        found += [f"CNI result {f}" for f in results.iterdir() if any(f.name.startswith(n + "-") for n in networks)]
    logs = Path("/var/log/containers")
    if logs.is_dir():
        found += [
            f"log link {f}"
            for f in logs.iterdir()
            if f.is_symlink() and str(f.readlink()).startswith(str(lay.state_dir) + "/")
        ]
    return found
