"""Host limits a local cluster needs, read from /proc before anything starts (issue 27 §1): inotify instances
and watches of the user (kubelet, containerd and the control plane each hold several; the kernel's
``fs.inotify.max_user_instances`` default of 128 runs out with a few clusters, and a kubelet then fails mid-run
with "too many open files"), and task IDs (``kernel.pid_max``, ``kernel.threads-max``, and every pids cgroup from
the harness's own up to the hierarchy's root: the tightest ``pids.max - pids.current`` counts, cgroup v1 and v2).
Each problem names the limit, what is in use, what the cluster needs and the exact command to raise it (``sysctl
-w``; for a pids cgroup ``systemctl set-property``, ``docker run --pids-limit`` only inside docker, or the cgroup's
file). Whose inotify counts: the user the cluster's kubelets run as (the harness's own for a local cluster, root for
kind, whose node containers run as root); processes whose open files cannot be read are counted in
``Usage.unreadable`` and :func:`caveats` says so.

Costs are measured (the constants below say how): per cluster and per real node, with headroom for the pods a
run starts. Pure apart from reading ``proc`` and the cgroup files.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

PROC = Path("/proc")
CGROUP = Path("/sys/fs/cgroup")
DOCKERENV = Path("/.dockerenv")  # docker creates it in every container
KIND_INOTIFY = (512, 524288)  # kind's known-issues page: max_user_instances, max_user_watches
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
    ``inotify wd:`` lines) and tasks (threads of every process, all users: task IDs are host-wide);
    ``unreadable``: that user's processes whose open files could not be read (not counted: e.g. root's, read by
    another user)."""

    inotify_instances: int = 0
    inotify_watches: int = 0
    tasks: int = 0
    unreadable: int = 0


@dataclasses.dataclass(frozen=True)
class PidsCgroup:
    """A pids cgroup of this process or one of its ancestors with a limit: ``path`` (as /proc/self/cgroup names
    it, e.g. ``/user.slice/user-1000.slice``), ``file`` (its ``pids.max`` on this host), ``max``, ``current``
    (``pids.current``: the tasks in it and below it; None when unreadable), ``docker``: inside a docker container
    or a docker scope."""

    path: str
    file: str
    max: int
    current: int | None
    docker: bool = False

    @property
    def room(self) -> int:
        """Tasks that may still start in it."""
        return self.max - (self.current or 0)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The host's limits: ``fs.inotify.max_user_instances`` / ``max_user_watches`` (per user),
    ``kernel.pid_max``, ``kernel.threads-max``, and the pids cgroup with the least room (None: no limit)."""

    max_user_instances: int
    max_user_watches: int
    pid_max: int
    threads_max: int
    cgroup_pids: PidsCgroup | None = None


def needs(nodes: int) -> Usage:
    """What a cluster of ``nodes`` real nodes adds (the measured constants above)."""
    return Usage(*(base + per * nodes for base, per in (INOTIFY_INSTANCES, INOTIFY_WATCHES, TASKS)))


def _int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _ancestry(base: Path, path: str) -> list[tuple[str, Path]]:
    """``(cgroup path, directory)`` from ``path`` up to the hierarchy root ``base``."""
    parts = [p for p in path.strip("/").split("/") if p]
    return [("/" + "/".join(parts[:n]), base.joinpath(*parts[:n])) for n in range(len(parts), -1, -1)]


def cgroup_pids(proc: Path = PROC, root: Path = CGROUP, dockerenv: Path = DOCKERENV) -> list[PidsCgroup]:
    """Every cgroup from this process's pids cgroup up to the root with a numeric ``pids.max`` (v1: the ``pids``
    controller's hierarchy under ``root/pids``; v2: the unified one under ``root``), leaf first. A directory
    missing on this host (a container's view) is skipped. [] when /proc/self/cgroup is unreadable or nothing is
    limited."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return []
    base = path = None
    for line in lines:
        _id, controllers, where = line.split(":", 2)
        if "pids" in controllers.split(","):
            base, path = root / "pids", where
            break
        if controllers == "" and (root / "cgroup.controllers").exists():
            base, path = root, where
    if base is None:
        return []
    docker = dockerenv.exists() or "docker" in path
    out = []
    for name, directory in _ancestry(base, path):
        limit = _int(directory / "pids.max")
        if limit is not None:
            out.append(PidsCgroup(name, str(directory / "pids.max"), limit, _int(directory / "pids.current"), docker))
    return out


def read_limits(proc: Path = PROC, root: Path = CGROUP, dockerenv: Path = DOCKERENV) -> Limits:
    """The limits from ``proc/sys`` (kernel defaults when unreadable) and the pids cgroup with the least room
    (:func:`cgroup_pids`)."""
    sysctl = proc / "sys"
    return Limits(
        max_user_instances=_int(sysctl / "fs/inotify/max_user_instances") or 128,
        max_user_watches=_int(sysctl / "fs/inotify/max_user_watches") or 8192,
        pid_max=_int(sysctl / "kernel/pid_max") or 32768,
        threads_max=_int(sysctl / "kernel/threads-max") or 32768,
        cgroup_pids=min(cgroup_pids(proc, root, dockerenv), key=lambda c: c.room, default=None),
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
    it), and every task on the host. Processes that exit while being read are skipped; those of ``uid`` whose open
    files cannot be read (``proc/<pid>/fd``: another user's, without root) are counted in ``unreadable``."""
    instances = watches = tasks = unreadable = 0
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            tasks += sum(1 for _ in (pid_dir / "task").iterdir())
            if _euid(pid_dir) != uid:
                continue
        except (OSError, ValueError):
            continue  # exited meanwhile
        try:
            i, w = _inotify_of(pid_dir)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable += 1
            continue
        instances, watches = instances + i, watches + w
    return Usage(instances, watches, tasks, unreadable)


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


def _pids_fix(cgroup: PidsCgroup, value: int) -> str:
    """How to raise ``cgroup``'s limit to ``value``: docker's option inside docker, ``systemctl set-property``
    for a systemd unit (the path's last part ends in .slice, .scope or .service), else its ``pids.max`` file."""
    unit = cgroup.path.rsplit("/", 1)[-1]
    if cgroup.docker:
        return (
            f"raise the container's limit (`docker run --pids-limit {value}` or `docker update --pids-limit {value}`)"
        )
    if unit.endswith((".slice", ".scope", ".service")):
        return f"run `systemctl set-property {unit} TasksMax={value}` as root (or run outside {unit})"
    return f"run `echo {value} > {cgroup.file}` as root (or run outside that cgroup)"


def problems(nodes: int, limits: Limits, usage: Usage, whose: str = "") -> list[str]:
    """One line per limit a cluster of ``nodes`` real nodes would exceed: the sysctl, its value, what is in
    use, what the cluster needs and the command to raise it; for the pids cgroup with the least room, its path,
    ``pids.max``, ``pids.current`` and how to raise it (:func:`_pids_fix`). ``whose``: appended to the inotify
    use (e.g. " by root (kind's nodes run as root)")."""
    need, out = needs(nodes), []
    what = f"a {nodes}-node local cluster"
    for key, limit, used, wanted in _rows(limits, usage, need):
        if used + wanted > limit:
            by = whose if key.startswith("fs.inotify") else ""
            out.append(
                f"{key}={limit}: {used} in use{by}, {what} needs about {wanted} more (else its kubelets fail with "
                f"'too many open files' or cannot start threads mid-run); run `sysctl -w {key}="
                f"{_raise_to(used + 2 * wanted)}` as root"
            )
    pids = limits.cgroup_pids
    if pids is not None and pids.room < need.tasks:
        used = "pids.current unreadable" if pids.current is None else f"{pids.current} in use"
        out.append(
            f"the pids cgroup {pids.path} of this process allows {pids.max} tasks ({pids.file}): {used}, {what} "
            f"needs about {need.tasks} more; {_pids_fix(pids, _raise_to((pids.current or 0) + 2 * need.tasks))}"
        )
    return out


def caveats(usage: Usage, uid: int) -> list[str]:
    """What the count could not see: ``uid``'s processes whose open files were unreadable (their inotify
    instances and watches are missing from ``usage``), with kind's recommended values."""
    if not usage.unreadable:
        return []
    return [
        f"could not read the open files of {usage.unreadable} process(es) of uid {uid} (this check runs as uid "
        f"{os.geteuid()}): their inotify instances and watches are not counted; run it as root, or make sure "
        f"fs.inotify.max_user_instances >= {KIND_INOTIFY[0]} and fs.inotify.max_user_watches >= {KIND_INOTIFY[1]} "
        "as kind recommends (https://kind.sigs.k8s.io/docs/user/known-issues/)"
    ]


def summary(nodes: int, limits: Limits, usage: Usage) -> list[str]:
    """``<sysctl>: <in use> in use + about <needed> for a <n>-node cluster, of <limit>`` lines, then the pids
    cgroup with the least room if any (what the lab's `cluster preflight` prints)."""
    pids = limits.cgroup_pids
    return [
        f"{key}: {used} in use + about {wanted} for a {nodes}-node cluster, of {limit}"
        for key, limit, used, wanted in _rows(limits, usage, needs(nodes))
    ] + ([f"pids cgroup {pids.path}: pids.current {pids.current}, pids.max {pids.max}"] if pids is not None else [])


def check(nodes: int, proc: Path = PROC, root: Path = CGROUP, uid: int | None = None) -> list[str]:
    """:func:`problems` for this host and user ``uid`` (default: the current one)."""
    who = os.geteuid() if uid is None else uid
    return problems(nodes, read_limits(proc, root), read_usage(who, proc))


def check_kind(nodes: int, proc: Path = PROC, root: Path = CGROUP) -> tuple[list[str], list[str]]:
    """``(problems, caveats)`` for a kind cluster of ``nodes`` node containers: inotify counted for root (uid 0:
    kind's nodes run as root and their kubelets charge root), task IDs and pids cgroups as for any cluster."""
    usage = read_usage(0, proc)
    found = problems(nodes, read_limits(proc, root), usage, whose=" by root (kind's nodes run as root)")
    return found, caveats(usage, 0)
