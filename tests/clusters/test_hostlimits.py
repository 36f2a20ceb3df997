"""Host limits before a local cluster starts (issue 27 §1), read from a fake /proc: inotify instances and
watches of the user, task IDs, the pids cgroup; each shortfall names the sysctl and the command to raise it."""

import os
from pathlib import Path

from conformance_lab.local import hostlimits


def _proc(root: Path, *, instances=128, watches=8192, pid_max=32768, threads=32768) -> Path:
    """A fake /proc with the four sysctls and no processes."""
    for key, value in (
        ("fs/inotify/max_user_instances", instances),
        ("fs/inotify/max_user_watches", watches),
        ("kernel/pid_max", pid_max),
        ("kernel/threads-max", threads),
    ):
        (root / "sys" / key).parent.mkdir(parents=True, exist_ok=True)
        (root / "sys" / key).write_text(f"{value}\n")
    return root


def _process(proc: Path, pid: int, uid: int, inotify_watches: list[int], threads: int = 1, files: int = 1) -> None:
    """Process ``pid`` of effective user ``uid`` with one inotify fd per entry of ``inotify_watches`` (that many
    watches each), ``files`` other fds and ``threads`` tasks."""
    d = proc / str(pid)
    for sub in ("fd", "fdinfo", "task"):
        (d / sub).mkdir(parents=True)
    (d / "status").write_text(f"Name:\tx\nUid:\t1000\t{uid}\t{uid}\t{uid}\n")
    for t in range(threads):
        (d / "task" / str(pid + t)).mkdir()
    for fd, count in enumerate(inotify_watches):
        os.symlink(hostlimits.INOTIFY, d / "fd" / str(fd))
        lines = [f"inotify wd:{w} ino:1 sdev:2 mask:3 ignored_mask:0" for w in range(count)]
        (d / "fdinfo" / str(fd)).write_text("pos:\t0\nflags:\t0\n" + "\n".join(lines) + "\n")
    for fd in range(len(inotify_watches), len(inotify_watches) + files):
        os.symlink("/dev/null", d / "fd" / str(fd))


def test_usage_counts_the_users_inotify_instances_and_watches_and_every_task(tmp_path):
    proc = _proc(tmp_path)
    _process(proc, 100, uid=0, inotify_watches=[3, 5], threads=4)
    _process(proc, 200, uid=0, inotify_watches=[1], threads=2)
    _process(proc, 300, uid=1000, inotify_watches=[7, 7, 7], threads=3)  # another user's: only its tasks count
    assert hostlimits.read_usage(0, proc) == hostlimits.Usage(inotify_instances=3, inotify_watches=9, tasks=9)


def test_the_kernel_default_of_128_instances_with_three_clusters_running_is_refused_with_the_sysctl(tmp_path):
    """128 instances (the kernel default) with 100 in use: a 2-node cluster (about 30 more) would exceed it;
    the problem names the limit, the use, the need and `sysctl -w fs.inotify.max_user_instances=...`."""
    proc = _proc(tmp_path, instances=128)
    _process(proc, 100, uid=0, inotify_watches=[1] * 100)
    problems = hostlimits.problems(2, hostlimits.read_limits(proc, tmp_path / "cg"), hostlimits.read_usage(0, proc))
    assert len(problems) == 1, problems
    need = hostlimits.needs(2).inotify_instances
    said = f"fs.inotify.max_user_instances=128: 100 in use, a 2-node local cluster needs about {need} more"
    assert problems[0].startswith(said), problems
    assert "`sysctl -w fs.inotify.max_user_instances=256` as root" in problems[0]


def test_watches_and_task_ids_short_are_each_named(tmp_path):
    proc = _proc(tmp_path, instances=8192, watches=400, pid_max=400, threads=100000)
    _process(proc, 100, uid=0, inotify_watches=[300], threads=200)
    problems = hostlimits.problems(1, hostlimits.read_limits(proc, tmp_path / "cg"), hostlimits.read_usage(0, proc))
    assert [p.split("=")[0] for p in problems] == ["fs.inotify.max_user_watches", "kernel.pid_max"], problems
    assert all("sysctl -w" in p for p in problems)


def test_a_roomy_host_has_no_problem(tmp_path):
    proc = _proc(tmp_path, instances=1024, watches=1048576, pid_max=4194304, threads=192735)
    _process(proc, 100, uid=0, inotify_watches=[10] * 20, threads=300)
    assert hostlimits.problems(8, hostlimits.read_limits(proc, tmp_path / "cg"), hostlimits.read_usage(0, proc)) == []


def test_a_pids_cgroup_too_small_names_the_container_limit(tmp_path):
    """cgroup v2: /proc/self/cgroup ``0::/ci/job`` and ``pids.max`` 500 under the unified hierarchy."""
    proc, cg = _proc(tmp_path / "proc"), tmp_path / "cg"
    (proc / "self").mkdir()
    (proc / "self" / "cgroup").write_text("0::/ci/job\n")
    (cg / "ci" / "job").mkdir(parents=True)
    (cg / "cgroup.controllers").write_text("cpu pids\n")
    (cg / "ci" / "job" / "pids.max").write_text("500\n")
    _process(proc, 100, uid=0, inotify_watches=[], threads=300)
    limits = hostlimits.read_limits(proc, cg)
    assert limits.cgroup_pids_max == 500
    problems = hostlimits.problems(2, limits, hostlimits.read_usage(0, proc))
    assert len(problems) == 1 and "pids cgroup of this process allows 500 tasks" in problems[0], problems
    assert "--pids-limit" in problems[0]


def test_an_unlimited_v1_pids_cgroup_is_no_limit(tmp_path):
    proc, cg = _proc(tmp_path / "proc"), tmp_path / "cg"
    (proc / "self").mkdir()
    (proc / "self" / "cgroup").write_text("8:pids:/job\n0::/\n")
    (cg / "pids" / "job").mkdir(parents=True)
    (cg / "pids" / "job" / "pids.max").write_text("max\n")
    assert hostlimits.read_limits(proc, cg).cgroup_pids_max is None


def test_this_host_can_be_read():
    """The real /proc parses (counts are whatever this host holds)."""
    usage = hostlimits.read_usage(os.geteuid())
    assert usage.tasks > 0 and hostlimits.read_limits().max_user_instances > 0
