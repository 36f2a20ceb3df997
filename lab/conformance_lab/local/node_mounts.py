"""Nodes that look like real nodes to a DaemonSet (``LocalClusterConfig.daemonset_paths``).

A driver chart's DaemonSet mounts the standard host paths ``/var/lib/kubelet/plugins``,
``/var/lib/kubelet/plugins_registry`` and the CDI directory (``/var/run/cdi`` or ``/etc/cdi``). Local nodes
share one host, so each node's containerd and kubelet run in a mount namespace of their own in which that
node's directories are bind-mounted at those paths; hostPath volumes of that node's containers (runc
resolves them in containerd's namespace) and the plugin socket paths the kubelet dials then resolve to the
node. The namespace is held by a recorded host process (``node-mounts``: ``unshare --mount --propagation
slave`` + the bind mounts + ``sleep``); containerd and the kubelet enter it with ``nsenter``. Slave
propagation: host mounts are seen inside, nothing mounted inside (the bind mounts, the kubelet's volume
mounts) reaches the host, and the namespace disappears with its last process (tear-down kills them all).

The kubelet runs with ``--root-dir=/var/lib/kubelet`` (the node's ``kubelet/`` dir), as on a real node: plugin
sockets named after pod UIDs stay under the unix path limit. The harness's host-path node access reads the same
files at ``<node dir>/kubelet`` and maps advertised ``/var/lib/kubelet/...`` endpoints there
(conformance_lab.local.node_access.host_path).
Missing mount points (``/run/cdi``, ``/etc/cdi``) are created empty on the host, recorded in the cluster state
and removed at tear-down when no other local cluster uses them.
Sources: util-linux unshare(1)/nsenter(1); mount_namespaces(7) (slave propagation); the dra-example-driver
chart's kubeletplugin.yaml (hostPaths).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

from conformance_lab.local import hostsys
from conformance_lab.local.config import RUN_ROOT
from conformance_lab.local.node_config import NodePaths
from conformance_lab.local.state import ClusterState, existing_clusters

HOLDER = "node-mounts"
CREATED = RUN_ROOT / "created-mount-points.json"  # host-wide: standard dirs some cluster created
KUBELET_DIR = Path("/var/lib/kubelet")
CDI_DIRS = (Path("/var/run/cdi"), Path("/etc/cdi"))
NRI_DIR = Path("/var/run/nri")  # containerd's default NRI socket directory (created by netdevs for NRI clusters)


def bind_mounts(np: NodePaths) -> list[tuple[Path, Path]]:
    """``[(node directory, standard path it appears at)]`` of node ``np``; targets with symlinks resolved
    (``/var/run/cdi`` -> ``/run/cdi``). A node whose containerd serves NRI (its NRI directory exists) also gets
    that directory at ``/var/run/nri``, where an NRI plugin's DaemonSet mounts it (dra-driver-cpu's chart)."""
    pairs = [(np.kubelet_root, KUBELET_DIR)] + [(np.cdi_dir, d) for d in CDI_DIRS]
    if np.nri_dir.is_dir():
        pairs.append((np.nri_dir, NRI_DIR))
    return [(src, _resolve(dst)) for src, dst in pairs]


def _resolve(path: Path) -> Path:
    return path.parent.resolve() / path.name


def ensure_mount_points(np: NodePaths) -> list[str]:
    """Create the missing standard directories on the host and add them to the host-wide record
    (:data:`CREATED`); returns the ones created. Call under ``state.host_lock``."""
    created = []
    for _, target in bind_mounts(np):
        if not target.exists():
            target.mkdir(parents=True)
            created.append(str(target))
    if created:
        CREATED.parent.mkdir(parents=True, exist_ok=True)
        CREATED.write_text(json.dumps(sorted(set(_recorded()) | set(created))))
    return created


def _recorded() -> list[str]:
    try:
        return list(json.loads(CREATED.read_text()))
    except (OSError, ValueError):
        return []


def holder_argv(np: NodePaths) -> list[str]:
    """Command line of the process that holds node ``np``'s mount namespace (its pid names the namespace)."""
    steps = [f"mount --bind {shlex.quote(str(s))} {shlex.quote(str(d))}" for s, d in bind_mounts(np)]
    script = "set -e; " + "; ".join(steps) + "; exec sleep infinity"
    return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c", script]


def kubelet_argv(argv: list[str]) -> list[str]:
    """The kubelet command line with ``--root-dir=/var/lib/kubelet`` (inside the namespace that is the node's
    ``kubelet/`` dir): a real node's layout, so socket paths plugins register (``<driver>-<pod uid>-reg.sock``)
    stay under the 108-byte unix socket limit and the endpoints they advertise are the kubelet's own paths."""
    return [a if not a.startswith("--root-dir=") else f"--root-dir={KUBELET_DIR}" for a in argv]


def enter(holder_pid: int, argv: list[str]) -> list[str]:
    """``argv`` run inside the namespace held by ``holder_pid`` (nsenter execs it: the pid stays argv's)."""
    return ["nsenter", f"--mount=/proc/{holder_pid}/ns/mnt", "--", *argv]


def reenter(argv: list[str], holder_pid: int) -> list[str]:
    """``argv`` (as :func:`enter` made it) entering the namespace of ``holder_pid`` instead (a re-created
    holder after an emulated reboot); argv without ``nsenter --mount=`` is returned unchanged."""
    if len(argv) > 1 and argv[0] == "nsenter" and argv[1].startswith("--mount="):
        return [argv[0], f"--mount=/proc/{holder_pid}/ns/mnt", *argv[2:]]
    return list(argv)


def namespace_of(pid: int) -> str:
    """The mount namespace of ``pid`` (``mnt:[inode]``); "" when it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return ""


def members(namespace: str) -> list[int]:
    """Pids in mount namespace ``namespace`` (:func:`namespace_of`), the holder included."""
    if not namespace:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and namespace_of(int(entry.name)) == namespace:
            found.append(int(entry.name))
    return sorted(found)


def mount_points_of(pid: int) -> set[str]:
    """Mount points seen by process ``pid`` (field 5 of /proc/<pid>/mountinfo); empty when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return set()
    return {line.split()[4] for line in lines if len(line.split()) > 4}


def wait_ready(np: NodePaths, holder_pid: int, timeout: float = 10.0) -> tuple[bool, str]:
    """Wait until every bind mount of ``np`` is in the holder's namespace: ``(ready, what is missing)``."""
    deadline = time.monotonic() + timeout
    missing: list[str] = []
    while time.monotonic() < deadline:
        seen = mount_points_of(holder_pid)
        missing = [str(d) for _, d in bind_mounts(np) if str(d) not in seen]
        if not missing:
            return True, ""
        time.sleep(0.05)
    return False, f"mounts {missing} absent in the namespace of pid {holder_pid}"


def others_use(name: str) -> bool:
    """True when a local cluster other than ``name`` runs (or starts) with ``daemonset_paths``."""
    for other in existing_clusters():
        if other == name:
            continue
        try:
            if ClusterState.load(other).host.get("daemonset_paths"):
                return True
        except (FileNotFoundError, ValueError, KeyError):
            continue
    return False


def remove_mount_points(name: str) -> list[str]:
    """When no other cluster uses them, remove the (empty) standard directories any cluster created; returns
    those that could not be removed. Call under ``state.host_lock`` (rmdir would unmount them in a running
    node's namespace)."""
    if others_use(name):
        return []
    left = hostsys.rmdir_each(list(_recorded()))
    if left:
        CREATED.write_text(json.dumps(left))
    else:
        CREATED.unlink(missing_ok=True)
    return left
