"""Host limits a local cluster needs, read from /proc before anything starts (issue 27 §1): inotify instances
and watches of the user (kubelet, containerd and the control plane each hold several; the kernel's
``fs.inotify.max_user_instances`` default of 128 runs out with a few clusters, and a kubelet then fails mid-run
with "too many open files"), and task IDs (``kernel.pid_max``, ``kernel.threads-max``, the pids cgroup of the
harness). Each problem names the limit, what is in use, what the cluster needs and the exact ``sysctl -w`` to raise.

Costs are measured (the constants below say how): per cluster and per real node, with headroom for the pods a
run starts. Pure apart from reading ``proc`` and the cgroup files.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

PROC = Path("/proc")
CGROUP = Path("/sys/fs/cgroup")
INOTIFY = "anon_inode:inotify"
# Measured on two idle 2-node clusters of the pinned release (2026-12-05, /proc of their recorded processes and
# descendants): 26 and 27 inotify instances (kubelet 6 per node, containerd 2 per node, control plane 10), 237
# watches (kubelet ~108 per node), ~100 tasks. Below: (per cluster, per real node), with headroom for a run's pods
# (each adds a containerd shim of ~10 threads and its containers).
INOTIFY_INSTANCES = (12, 9)  # 2 nodes: 30
INOTIFY_WATCHES = (50, 150)  # 2 nodes: 350
TASKS = (100, 250)  # 2 nodes: 600


@dataclasses.dataclass(frozen=True)
class Usage:
    """Counts for one user: inotify instances (open inotify file descriptors), inotify watches (their
    ``inotify wd:`` lines) and tasks (threads of every process, all users: task IDs are host-wide)."""

    inotify_instances: int = 0
    inotify_watches: int = 0
    tasks: int = 0


@dataclasses.dataclass(frozen=True)
class Limits:
    """The host's limits: ``fs.inotify.max_user_instances`` / ``max_user_watches`` (per user),
    ``kernel.pid_max``, ``kernel.threads-max``, and the pids cgroup's ``pids.max`` (None: no limit)."""

    max_user_instances: int
    max_user_watches: int
    pid_max: int
    threads_max: int
    cgroup_pids_max: int | None = None


def needs(nodes: int) -> Usage:
    """What a cluster of ``nodes`` real nodes adds (the measured constants above)."""
    return Usage(*(base + per * nodes for base, per in (INOTIFY_INSTANCES, INOTIFY_WATCHES, TASKS)))


def _int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def cgroup_pids_max(proc: Path = PROC, root: Path = CGROUP) -> int | None:
    """``pids.max`` of this process's pids cgroup (v1 ``pids`` controller or the v2 unified path); None when
    unlimited or unreadable."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controllers == "pids":
            return _int(root / "pids" / path.lstrip("/") / "pids.max")
        if controllers == "" and (root / "cgroup.controllers").exists():
            return _int(root / path.lstrip("/") / "pids.max")
    return None


def read_limits(proc: Path = PROC, root: Path = CGROUP) -> Limits:
    """The limits from ``proc/sys`` (kernel defaults when unreadable) and the pids cgroup."""
    sysctl = proc / "sys"
    return Limits(
        max_user_instances=_int(sysctl / "fs/inotify/max_user_instances") or 128,
        max_user_watches=_int(sysctl / "fs/inotify/max_user_watches") or 8192,
        pid_max=_int(sysctl / "kernel/pid_max") or 32768,
        threads_max=_int(sysctl / "kernel/threads-max") or 32768,
        cgroup_pids_max=cgroup_pids_max(proc, root),
    )


def _euid(pid_dir: Path) -> int | None:
    for line in (pid_dir / "status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])
    return None


def _inotify_of(pid_dir: Path) -> tuple[int, int]:
    instances = watches = 0
    for fd in (pid_dir / "fd").iterdir():
        try:
            if os.readlink(fd) != INOTIFY:
                continue
            instances += 1
            info = (pid_dir / "fdinfo" / fd.name).read_text()
        except OSError:
            continue  # closed meanwhile
        watches += sum(line.startswith("inotify wd:") for line in info.splitlines())
    return instances, watches


def read_usage(uid: int, proc: Path = PROC) -> Usage:
    """Inotify instances and watches held by processes of effective user ``uid`` (the kernel charges them to
    it), and every task on the host. Processes that exit while being read are skipped."""
    instances = watches = tasks = 0
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            tasks += sum(1 for _ in (pid_dir / "task").iterdir())
            if _euid(pid_dir) == uid:
                i, w = _inotify_of(pid_dir)
                instances, watches = instances + i, watches + w
        except (OSError, ValueError):
            continue
    return Usage(instances, watches, tasks)


def _raise_to(needed: int) -> int:
    """A round value at least ``needed``: the next power of two."""
    return 1 << max(needed - 1, 1).bit_length()


def _rows(limits: Limits, usage: Usage, need: Usage) -> list[tuple[str, int, int, int]]:
    """``(sysctl, limit, in use, needed)`` per sysctl."""
    return [
        ("fs.inotify.max_user_instances", limits.max_user_instances, usage.inotify_instances, need.inotify_instances),
        ("fs.inotify.max_user_watches", limits.max_user_watches, usage.inotify_watches, need.inotify_watches),
        ("kernel.pid_max", limits.pid_max, usage.tasks, need.tasks),
        ("kernel.threads-max", limits.threads_max, usage.tasks, need.tasks),
    ]


def problems(nodes: int, limits: Limits, usage: Usage) -> list[str]:
    """One line per limit a cluster of ``nodes`` real nodes would exceed: the sysctl, its value, what is in
    use, what the cluster needs and the command to raise it (or, for a pids cgroup, the container option)."""
    need, out = needs(nodes), []
    what = f"a {nodes}-node local cluster"
    for key, limit, used, wanted in _rows(limits, usage, need):
        if used + wanted > limit:
            out.append(
                f"{key}={limit}: {used} in use, {what} needs about {wanted} more (else its kubelets fail with "
                f"'too many open files' or cannot start threads mid-run); run `sysctl -w {key}="
                f"{_raise_to(used + 2 * wanted)}` as root"
            )
    pids = limits.cgroup_pids_max
    if pids is not None and usage.tasks + need.tasks > pids:
        out.append(
            f"the pids cgroup of this process allows {pids} tasks: {usage.tasks} in use, {what} needs about "
            f"{need.tasks} more; raise the container's limit (e.g. `docker run --pids-limit "
            f"{_raise_to(usage.tasks + 2 * need.tasks)}`) or run outside it"
        )
    return out


def summary(nodes: int, limits: Limits, usage: Usage) -> list[str]:
    """``<sysctl>: <in use> in use + about <needed> for a <n>-node cluster, of <limit>`` lines, then the pids
    cgroup's limit if any (what the lab's `cluster preflight` prints)."""
    return [
        f"{key}: {used} in use + about {wanted} for a {nodes}-node cluster, of {limit}"
        for key, limit, used, wanted in _rows(limits, usage, needs(nodes))
    ] + ([f"pids cgroup: pids.max {limits.cgroup_pids_max}"] if limits.cgroup_pids_max is not None else [])


def check(nodes: int, proc: Path = PROC, root: Path = CGROUP) -> list[str]:
    """:func:`problems` for this host and the current user."""
    return problems(nodes, read_limits(proc, root), read_usage(os.geteuid(), proc))
