"""Disruptive operations on a local cluster (the provider side of the disruptive lane): restart a kubelet,
emulate a node reboot, restart kube-controller-manager. Each waits, bounded, until the component serves again
and raises an error naming the component and its log file when it does not; each puts every process it
stopped back in place even when a step fails (so later tests find a healthy cluster).

Node reboot emulation (local-cluster.md §3.5: one containerd + kubelet per node, host paths per node): stop
the node's host processes (driver plugins started through the handle), its kubelet, kill the containers in
the node's cgroup (as power-off does), stop its containerd and shims, unmount and empty the node's own run
directory (what a reboot clears: ``/run`` is a tmpfs, it holds containerd's state and socket and the CDI spec
directory the runtime reads), then start containerd, the kubelet (node Ready with a fresh heartbeat) and the
node's other processes again, in that order. A node with ``daemonset_paths`` (node_mounts) runs in a mount
namespace of its own: after its processes are gone the namespace's holder is stopped too and the kernel drops
the namespace with every mount made inside it; a new holder binds the re-created directories before
containerd and the kubelet enter it (by the new holder's pid). The driver's DaemonSet pod is then started
again by the kubelet, as after a real boot. Only the node's own directories are touched, never the host's.
The kubelet root (``/var/lib/kubelet``: its DRA checkpoint, registration dir) and containerd's root
(images, container metadata) are on disk and survive, as on a real node.

Sources: kubelet pkg/kubelet/cm/dra (claim info checkpoint ``dra_manager_state``; prepared claims are
re-prepared after a restart), KEP-4381 (drivers keep their own state across restarts), upstream
test/e2e_node/dra_test.go (kubelet restart scenarios, feature catalog RST-01..RST-07).
"""

from __future__ import annotations

import calendar
import contextlib
import shutil
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from conformance_lab.local import api as apilib
from conformance_lab.local import hostsys, netns, node_mounts
from conformance_lab.local.config import Layout
from conformance_lab.local.node_config import node_paths
from conformance_lab.local.processes import HostProcess, kill_pids, processes_matching
from conformance_lab.local.state import ClusterState

COMPONENTS = ("kubelet", "containerd")
CONTAINERD_TIMEOUT = 30.0  # seconds until a restarted containerd accepts connections
KCM_TIMEOUT = 60.0  # seconds until a restarted kube-controller-manager answers /healthz


def node_index(lay: Layout, node: str) -> int:
    """The index of ``node`` in the layout; KeyError naming the nodes."""
    for i in range(lay.nodes):
        if lay.node_name(i) == node:
            return i
    raise KeyError(f"no node {node!r} in cluster {lay.name!r}; nodes: {[lay.node_name(i) for i in range(lay.nodes)]}")


def _process(state: ClusterState, name: str, node: str = "") -> HostProcess:
    proc = state.process(name, node) if node else state.process(name)
    if proc is None:
        where = f" for node {node}" if node else ""
        raise KeyError(f"no {name} recorded{where} in cluster {state.name!r}")
    return proc


def _died(proc: HostProcess) -> Callable[[], str | None]:
    return lambda: (
        None if proc.is_running() else f"{proc.name} exited; its log ({proc.log_path}) ends with:\n{proc.tail()}"
    )


def wait_node_ready(api: apilib.Api, node: str, since: float, kubelet: HostProcess, timeout: float) -> None:
    """Wait until ``node`` is Ready with a heartbeat not older than ``since`` (epoch seconds) and ``kubelet``
    still runs. Raises WaitTimeout (last conditions, the kubelet log path) or WaitFailed (the kubelet exited)."""

    def fresh() -> tuple[bool, str]:
        done, observed = apilib.nodes_ready(api, [node])
        obj = api.get_json(f"/api/v1/nodes/{node}") or {}
        hb = [
            c.get("lastHeartbeatTime", "")
            for c in obj.get("status", {}).get("conditions", [])
            if c.get("type") == "Ready"
        ]
        stamp = time.strptime(hb[0], "%Y-%m-%dT%H:%M:%SZ") if hb and hb[0] else None
        recent = stamp is not None and calendar.timegm(stamp) >= int(since) - 1
        return done and recent and kubelet.is_running(), f"{observed}; heartbeat {hb}; kubelet log {kubelet.log_path}"

    apilib.wait_for(f"node {node} Ready after its kubelet started again", fresh, timeout, failed=_died(kubelet))


def _socket_serves(path: Path) -> tuple[bool, str]:
    if not path.exists():
        return False, f"{path} does not exist yet"
    with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as s:
        s.settimeout(2.0)
        try:
            s.connect(str(path))
        except OSError as exc:
            return False, f"{path}: {exc}"
    return True, f"{path} accepts connections"


def _other_node_processes(state: ClusterState, node: str) -> list[HostProcess]:
    """Processes recorded for ``node`` besides its kubelet, containerd and mount-namespace holder (driver
    plugins), in start order."""
    kept = (*COMPONENTS, node_mounts.HOLDER, netns.NODE_HOLDER)  # the node's network namespace outlives a reboot
    return [p for p in state.processes if p.node == node and p.name not in kept]


def reboot_node(state: ClusterState, lay: Layout, api: apilib.Api, node: str, timeout: float) -> list[str]:
    """Emulate a reboot of ``node`` (module docstring) and wait until it is Ready again (``timeout`` seconds
    for the kubelet; containerd gets :data:`CONTAINERD_TIMEOUT`). Returns what was cleared (for evidence).
    Raises KeyError (unknown node), WaitTimeout/WaitFailed naming the component and its log, RuntimeError
    when the node's mounts cannot be removed. Every stopped process is started again before an error leaves."""
    i = node_index(lay, node)
    np = node_paths(lay, i)
    kubelet, containerd = _process(state, "kubelet", node), _process(state, "containerd", node)
    holder = state.process(node_mounts.HOLDER, node)  # daemonset_paths: the node's mount namespace
    namespace = node_mounts.namespace_of(holder.pid) if holder is not None else ""
    others = _other_node_processes(state, node)
    cleared: list[str] = []
    try:
        for proc in reversed(others):
            proc.stop(timeout=10.0)
        kubelet.stop(timeout=10.0)
        survivors = hostsys.kill_cgroup(lay.cgroup_root(i))
        if survivors:
            raise RuntimeError(
                f"container processes of node {node} survived the emulated power-off: {sorted(survivors)}"
            )
        containerd.stop(timeout=10.0)
        kill_pids(processes_matching(str(np.containerd_socket)))  # shims named after the node's socket
        hostsys.remove_dead_shim_sockets()
        if holder is not None:
            _drop_namespace(holder, namespace, node)
        for target in (np.run_dir, np.kubelet_root):  # tmpfs mounts (netns, shm, projected volumes)
            left = hostsys.unmount_under(target)
            if left:
                raise RuntimeError(f"mounts of node {node} could not be removed: {left[:5]}")
        cleared = sorted(str(p) for p in np.run_dir.iterdir()) if np.run_dir.is_dir() else []
        shutil.rmtree(np.run_dir, ignore_errors=True)
        if np.run_dir.exists():
            raise RuntimeError(f"the run directory {np.run_dir} of node {node} could not be emptied")
    finally:
        np.run_dir.mkdir(parents=True, exist_ok=True)
        np.cdi_dir.mkdir(parents=True, exist_ok=True)
        if holder is not None:
            _new_namespace(state, np, holder, (containerd, kubelet))
        _start_node(state, api, node, np, kubelet, containerd, others, timeout)
    return cleared


def _drop_namespace(holder: HostProcess, ns: str, node: str) -> None:
    """Power-off of a node in a mount namespace of its own (daemonset_paths): kill what is still in it, stop
    its holder, and wait until no process is left in it: the kernel then drops the namespace with every mount
    made inside (the bind mounts, the kubelet's volume mounts, containerd's netns mounts). Raises RuntimeError
    naming the pids still in it. ``ns``: the namespace (read before anything was stopped)."""
    inside = node_mounts.members(ns)  # pids, not the namespace id, are awaited: a freed id is reused at once
    kill_pids([pid for pid in inside if pid != holder.pid])
    holder.stop(timeout=5.0)

    def left() -> list[int]:
        return [pid for pid in inside if node_mounts.namespace_of(pid) == ns]

    deadline = time.monotonic() + 10.0
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    if left():
        raise RuntimeError(f"processes {left()} are still in the mount namespace {ns} of node {node}")


def _new_namespace(state: ClusterState, np, holder: HostProcess, entering: tuple[HostProcess, ...]) -> None:
    """Boot of a daemonset_paths node: a new holder with fresh bind mounts of the node's (re-created) dirs, and
    ``entering`` (containerd, kubelet) re-pointed at it. Nothing to do when the old holder still runs (a step
    before the power-off failed). Raises RuntimeError naming the missing mounts and the holder's log."""
    if holder.is_running():
        return
    holder.restart()
    ok, missing = node_mounts.wait_ready(np, holder.pid)
    if not ok:
        raise RuntimeError(f"mount namespace of node {np.name}: {missing}; its log ends with:\n{holder.tail()}")
    for proc in entering:
        proc.argv = node_mounts.reenter(proc.argv, holder.pid)
    state.save()


def _start_node(state, api, node, np, kubelet, containerd, others, timeout) -> None:
    """Start containerd (wait for its socket), the kubelet (wait for Ready), then ``others``; each only when it
    is not running (a failed stop left it running)."""
    if not containerd.is_running():
        containerd.restart()
        state.save()
    apilib.wait_for(
        f"containerd of node {node} serving on {np.containerd_socket} (log {containerd.log_path})",
        lambda: _socket_serves(np.containerd_socket),
        CONTAINERD_TIMEOUT,
        failed=_died(containerd),
    )
    since = time.time()
    if not kubelet.is_running():
        kubelet.restart()
        state.save()
    wait_node_ready(api, node, since, kubelet, timeout)
    for proc in others:
        if not proc.is_running():
            proc.restart()
    state.save()


def _kcm_healthy(port: int) -> tuple[bool, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # its serving cert is self-signed, on loopback
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=5) as resp:
            body = resp.read().decode(errors="replace")
            return resp.status == 200 and body.strip() == "ok", f"/healthz {resp.status}: {body[:200]}"
    except OSError as exc:
        return False, f"/healthz on port {port}: {exc}"


def restart_controller_manager(
    state: ClusterState, lay: Layout, while_stopped: Callable[[], None] | None = None, timeout: float = KCM_TIMEOUT
) -> None:
    """Stop kube-controller-manager, run ``while_stopped`` (e.g. delete pods and claims meanwhile), start it
    again and wait until its /healthz answers ok. The controller manager is started again even when
    ``while_stopped`` raises (that error then propagates). Raises WaitTimeout/WaitFailed naming its log."""
    kcm = _process(state, "kube-controller-manager")
    kcm.stop(timeout=10.0)
    try:
        if while_stopped is not None:
            while_stopped()
    finally:
        kcm.restart()
        state.save()
        apilib.wait_for(
            f"kube-controller-manager /healthz ok after its restart (log {kcm.log_path})",
            lambda: _kcm_healthy(lay.kcm_port),
            timeout,
            failed=_died(kcm),
        )
