"""Growth probes of a local cluster between runs: resident memory and open file descriptors of its processes
(from /proc: ``VmRSS`` of /proc/PID/status, entries of /proc/PID/fd), and the API objects a run may leave
(namespaces, ResourceClaims, ResourceSlices, DeviceClasses, pods, and any object still carrying a run label —
conformance.k8s.sweep's kinds).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from conformance_lab.local.state import ClusterState

from conformance.core import errors
from conformance.k8s import sweep
from conformance.k8s.client import K8s

PROCESSES = ("kube-apiserver", "kubelet", "containerd")  # the ones whose growth a soak follows
OBJECT_KINDS = ("Namespace", "ResourceClaim", "ResourceSlice", "DeviceClass", "Pod")


def rss_kib(pid: int) -> int | None:
    """``VmRSS`` of ``pid`` in KiB (None when the process is gone or unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def fd_count(pid: int) -> int | None:
    """Open file descriptors of ``pid`` (entries of /proc/PID/fd; None when unreadable)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


@dataclasses.dataclass
class Usage:
    """Summed over the cluster's processes of each name in :data:`PROCESSES`: ``rss_mib`` (MiB, one decimal) and
    ``fds``; processes that are gone or unreadable count 0 and are named in ``missing``."""

    rss_mib: dict[str, float]
    fds: dict[str, int]
    missing: list[str]


def usage(cluster: str) -> Usage:
    """Memory and descriptors of local cluster ``cluster``'s recorded processes. Raises FileNotFoundError when
    the cluster has no state."""
    state = ClusterState.load(cluster)
    rss: dict[str, float] = {}
    fds: dict[str, int] = {}
    missing = []
    for proc in state.processes:
        if proc.name not in PROCESSES:
            continue
        kib, n = (rss_kib(proc.pid), fd_count(proc.pid)) if proc.is_running() else (None, None)
        if kib is None or n is None:
            missing.append(f"{proc.name}{'@' + proc.node if proc.node else ''}")
        rss[proc.name] = round(rss.get(proc.name, 0) + (kib or 0) / 1024, 1)
        fds[proc.name] = fds.get(proc.name, 0) + (n or 0)
    return Usage(rss, fds, missing)


def objects(kubeconfig: str) -> dict[str, int]:
    """``{kind: count}`` of :data:`OBJECT_KINDS` cluster-wide, plus ``labelled`` (objects of any run still on the
    cluster: conformance.k8s.sweep.run_ids) as the number of such run IDs. Raises ConformanceError when the API
    server does not answer."""
    k8s = K8s.from_kubeconfig(kubeconfig)
    counts = {}
    for kind in OBJECT_KINDS:
        try:
            counts[kind] = len(k8s.list(kind))
        except errors.NotFound:
            counts[kind] = 0
    counts["runs left"] = len(sweep.run_ids(k8s))
    return counts
