"""Host limits before a local cluster starts (issue 27 §1), read from a fake /proc: inotify instances and
watches of the user, task IDs, the pids cgroup; each shortfall names the sysctl and the command to raise it."""

import dataclasses
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


def _cgroups(tmp_path, own: str, limits: dict[str, tuple[str, int | None]], v1: bool = False) -> tuple[Path, Path]:
    """A fake /proc (self in cgroup ``own``) and cgroup tree: ``limits`` maps a cgroup path ("/" the root) to
    ``(pids.max, pids.current)`` (current None: no file)."""
    proc, cg = _proc(tmp_path / "proc"), tmp_path / "cg"
    (proc / "self").mkdir()
    (proc / "self" / "cgroup").write_text(f"8:pids:{own}\n0::/\n" if v1 else f"0::{own}\n")
    base = cg / "pids" if v1 else cg
    base.mkdir(parents=True)
    if not v1:
        (cg / "cgroup.controllers").write_text("cpu pids\n")
    (base / own.strip("/")).mkdir(parents=True, exist_ok=True)
    for path, (limit, current) in limits.items():
        d = base / path.strip("/")
        d.mkdir(parents=True, exist_ok=True)
        (d / "pids.max").write_text(f"{limit}\n")
        if current is not None:
            (d / "pids.current").write_text(f"{current}\n")
    return proc, cg


def test_a_pids_cgroup_too_small_names_the_cgroup_and_its_file_not_docker_outside_docker(tmp_path):
    """cgroup v2: /proc/self/cgroup ``0::/ci/job``, its ``pids.max`` 500 with 300 in it: a 2-node cluster (600
    more) does not fit; the problem names the cgroup and its file, and no docker option (no /.dockerenv)."""
    proc, cg = _cgroups(tmp_path, "/ci/job", {"/ci/job": ("500", 300)})
    limits = hostlimits.read_limits(proc, cg, dockerenv=tmp_path / "no-dockerenv")
    assert (limits.cgroup_pids.max, limits.cgroup_pids.current, limits.cgroup_pids.path) == (500, 300, "/ci/job")
    problems = hostlimits.problems(2, limits, hostlimits.Usage(tasks=300))
    assert len(problems) == 1 and "pids cgroup /ci/job of this process allows 500 tasks" in problems[0], problems
    assert "300 in use" in problems[0] and f"`echo 2048 > {cg}/ci/job/pids.max` as root" in problems[0], problems
    assert "docker" not in problems[0]


def test_inside_docker_the_fix_is_the_containers_pids_limit(tmp_path):
    """In a container (cgroup namespace: ``0::/``, /.dockerenv present) the root of the view carries the limit."""
    proc, cg = _cgroups(tmp_path, "/", {"/": ("500", 300)})
    (tmp_path / "dockerenv").write_text("")
    limits = hostlimits.read_limits(proc, cg, dockerenv=tmp_path / "dockerenv")
    problems = hostlimits.problems(2, limits, hostlimits.Usage(tasks=300))
    assert len(problems) == 1 and "`docker run --pids-limit 2048`" in problems[0], problems


def test_a_limit_on_a_parent_slice_is_found_under_an_unlimited_leaf(tmp_path):
    """Breaker finding 7: the leaf session scope says ``max``, the parent ``user-1000.slice`` allows 200 with 150
    in use: reported, with the systemd fix for that slice (not docker's)."""
    own = "/user.slice/user-1000.slice/session-3.scope"
    proc, cg = _cgroups(tmp_path, own, {own: ("max", 20), "/user.slice/user-1000.slice": ("200", 150)})
    limits = hostlimits.read_limits(proc, cg, dockerenv=tmp_path / "no-dockerenv")
    assert limits.cgroup_pids.path == "/user.slice/user-1000.slice" and limits.cgroup_pids.room == 50
    problems = hostlimits.problems(1, limits, hostlimits.Usage(tasks=5000))
    assert len(problems) == 1 and "pids cgroup /user.slice/user-1000.slice" in problems[0], problems
    assert "`systemctl set-property user-1000.slice TasksMax=1024` as root" in problems[0], problems
    assert "--pids-limit" not in problems[0]


def test_host_wide_tasks_are_not_compared_with_a_cgroups_limit(tmp_path):
    """Breaker finding 7: 5000 tasks on the host, but this cgroup holds 10 of its 4096: room for 600 more."""
    proc, cg = _cgroups(tmp_path, "/ci/job", {"/ci/job": ("4096", 10)})
    limits = hostlimits.read_limits(proc, cg, dockerenv=tmp_path / "no-dockerenv")
    limits = dataclasses.replace(limits, pid_max=4194304, threads_max=4194304, max_user_instances=1024)
    assert hostlimits.problems(2, limits, hostlimits.Usage(tasks=5000)) == []


def test_the_tightest_of_the_ancestry_counts_in_cgroup_v1(tmp_path):
    """cgroup v1 (``8:pids:/ci/job``): the job allows 5000 (10 used) but ``/ci`` allows 300 with 290 used."""
    proc, cg = _cgroups(tmp_path, "/ci/job", {"/ci/job": ("5000", 10), "/ci": ("300", 290)}, v1=True)
    limits = hostlimits.read_limits(proc, cg, dockerenv=tmp_path / "no-dockerenv")
    assert (limits.cgroup_pids.path, limits.cgroup_pids.room) == ("/ci", 10)
    assert [c.path for c in hostlimits.cgroup_pids(proc, cg, tmp_path / "none")] == ["/ci/job", "/ci"]
    problems = hostlimits.problems(1, limits, hostlimits.Usage())
    assert len(problems) == 1 and "pids cgroup /ci of this process allows 300 tasks" in problems[0], problems


def test_an_unlimited_v1_pids_cgroup_is_no_limit(tmp_path):
    proc, cg = _cgroups(tmp_path, "/job", {"/job": ("max", 3)}, v1=True)
    assert hostlimits.read_limits(proc, cg).cgroup_pids is None


def test_kind_counts_roots_inotify_and_says_what_it_could_not_read(tmp_path):
    """Breaker finding 7: kind's kubelets run as root. The check counts uid 0 (not the harness user) and names
    the root processes whose open files it could not read (here: an fd table that cannot be listed)."""
    proc = _proc(tmp_path / "proc", instances=128)
    _process(proc, 100, uid=0, inotify_watches=[1] * 110)  # root's kubelets and containerd of running clusters
    _process(proc, 200, uid=1000, inotify_watches=[1] * 3)  # the harness user's
    _process(proc, 300, uid=0, inotify_watches=[])
    for fd in (proc / "300" / "fd").iterdir():
        fd.unlink()
    (proc / "300" / "fd").rmdir()
    (proc / "300" / "fd").write_text("")  # listing it fails like a permission denial
    usage = hostlimits.read_usage(0, proc)
    assert (usage.inotify_instances, usage.unreadable) == (110, 1), usage
    problems, caveats = hostlimits.check_kind(2, proc, tmp_path / "cg")
    assert len(problems) == 1 and "110 in use by root (kind's nodes run as root)" in problems[0], problems
    assert len(caveats) == 1 and "could not read the open files of 1 process(es) of uid 0" in caveats[0], caveats
    assert "max_user_instances >= 512" in caveats[0] and "max_user_watches >= 524288" in caveats[0]
    assert hostlimits.caveats(hostlimits.Usage(), 0) == []


def test_this_host_can_be_read():
    """The real /proc parses (counts are whatever this host holds)."""
    usage = hostlimits.read_usage(os.geteuid())
    assert usage.tasks > 0 and hostlimits.read_limits().max_user_instances > 0
