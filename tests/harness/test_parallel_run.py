"""Unit tests of the parallel main job without a cluster (issue 14, "Speed"): the ``--workers`` value and the
pytest arguments it becomes, the run and device locks between processes, the wait clock, and the timings
document (aggregation of phase reports, shares, slowest tests, the summary.md line)."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance import cli
from conformance.k8s.tracker import Tracker
from conformance.k8s.waits import clock, core
from conformance.reporting import markdown
from conformance.runner import cli as runner_cli
from conformance.runner import parallel, timings


# -- --workers --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [("0", 0), ("4", 4), (" 6 ", 6), ("32", 32)])
def test_workers_accepts_zero_to_the_maximum(text, value):
    assert runner_cli.parse_workers(text) == value


@pytest.mark.parametrize("text", ["-1", "33", "four", "", "2.5", "auto"])
def test_workers_refuses_other_values_naming_the_value_and_the_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"--workers .*from 0 \(serial\) to 32"):
        runner_cli.parse_workers(text)


def test_run_defaults_to_the_default_workers_and_takes_n_or_workers():
    parser = cli.build_parser()
    assert parser.parse_args(["run"]).workers == runner_cli.DEFAULT_WORKERS > 0
    assert parser.parse_args(["run", "--workers", "0"]).workers == 0
    assert parser.parse_args(["run", "-n", "6", "--", "-k", "smoke"]).workers == 6


def test_bad_workers_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["run", "--workers", "many"])
    assert exc.value.code == 4 and "--workers 'many'" in capsys.readouterr().err  # usage error = bad input


def _args(workers, *extra):
    return argparse.Namespace(pytest_args=["--", *extra], allow_disruptive=False, keep_cluster=False, workers=workers)


def _pytest_args(workers, *extra):
    return runner_cli.build_pytest_args(_args(workers, *extra), "r1", Path("reports") / "r")


def test_workers_become_xdist_arguments_with_loadgroup_and_zero_stays_serial():
    four = _pytest_args(4, "-k", "smoke")
    assert four[four.index("-n") + 1] == "4" and four[four.index("--dist") + 1] == "loadgroup"
    assert "-n" not in _pytest_args(0) and "--dist" not in _pytest_args(0)


@pytest.mark.parametrize("given", [["-n", "2"], ["-n2"], ["--numprocesses=2"], ["-nauto"]])
def test_workers_in_the_pytest_arguments_win_and_get_loadgroup_once(given):
    out = _pytest_args(4, *given)
    assert out.count("--dist") == 1 and out[-len(given) :] == given and out.count("-n") == given.count("-n")


def test_pdb_keeps_the_run_serial():
    assert "-n" not in _pytest_args(4, "--pdb")


def test_disruptive_profile_runs_serially():
    """Restarted kubelets, plugins and kube-controller-manager must be stopped by the process that restarted
    them (a parallel disruptive run left them running after tear-down)."""
    args = _args(4, "-k", "restart")
    args.profile = "disruptive"
    out = runner_cli.build_pytest_args(args, "r1", Path("reports") / "r")
    assert "-n" not in out and "--dist" not in out


# -- locks ------------------------------------------------------------------------------------------------
def _hold(folder, exclusive, devices, started, release):
    locks = parallel.RunLocks(folder)
    locks.begin(exclusive)
    if devices:
        locks.need_devices()
    started.set()
    release.wait(10)
    locks.end()


def _other_process(folder, exclusive, devices):
    ctx = multiprocessing.get_context("fork")
    started, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(folder, exclusive, devices, started, release))
    proc.start()
    assert started.wait(10)
    return proc, release


def _blocks(fn, seconds=0.3) -> bool:
    done = threading.Event()
    threading.Thread(target=lambda: (fn(), done.set()), daemon=True).start()
    return not done.wait(seconds)


def test_shared_tests_overlap_but_an_exclusive_one_waits_for_them(tmp_path):
    proc, release = _other_process(tmp_path, exclusive=False, devices=False)
    try:
        shared = parallel.RunLocks(tmp_path)
        assert not _blocks(lambda: shared.begin(False))
        shared.end()
        exclusive = parallel.RunLocks(tmp_path)
        assert _blocks(lambda: exclusive.begin(True))
        release.set()
        proc.join(10)
        deadline = time.monotonic() + 5
        while exclusive._run_fd is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert exclusive._run_fd is not None and exclusive.queued_before_s > 0.2
        exclusive.end()
    finally:
        release.set()
        proc.join(10)


def test_a_second_test_starting_pods_waits_for_the_device_lock_but_not_an_api_only_test(tmp_path):
    proc, release = _other_process(tmp_path, exclusive=False, devices=True)
    try:
        api_only = parallel.RunLocks(tmp_path)
        assert not _blocks(lambda: api_only.begin(False))
        assert _blocks(api_only.need_devices)
        release.set()
        proc.join(10)
        time.sleep(0.3)
        assert api_only._device_fd is not None and api_only.queued_s > 0.2
        api_only.end()
        assert api_only._device_fd is None and api_only._run_fd is None
    finally:
        release.set()
        proc.join(10)


def test_an_exclusive_test_never_asks_for_the_device_lock(tmp_path):
    locks = parallel.RunLocks(tmp_path)
    locks.begin(True)
    locks.need_devices()
    assert locks._device_fd is None and locks.kind == "exclusive"
    locks.end()
    locks.need_devices()  # outside a test: nothing to take
    assert locks._device_fd is None


def test_guard_takes_the_device_lock_only_before_a_pod(tmp_path):
    config = SimpleNamespace(stash={})
    config.stash[parallel.LOCKS] = locks = parallel.RunLocks(tmp_path)
    tracker = SimpleNamespace(before_create=[], after_release=[])
    parallel.guard(config, tracker)
    locks.begin(False)
    tracker.before_create[0]({"kind": "ResourceClaim"})
    assert locks._device_fd is None
    assert locks.kind == "shared"
    tracker.before_create[0]({"kind": "Pod"})
    assert locks._device_fd is not None and locks.kind == "devices"
    locks.end()
    serial = SimpleNamespace(before_create=[], after_release=[])
    parallel.guard(SimpleNamespace(stash={}), serial)
    assert serial.before_create == [] and serial.after_release == []


def test_a_test_that_gave_its_devices_back_lets_one_needing_every_device_start(tmp_path):
    """PUB-01's window: once its pod and claim are gone (``tracker.release_devices()``) it gives the device
    lock back and keeps the run lock, so a test needing every device starts during the window; its device time
    ends at ``devices_until`` (what the overlap check reads)."""
    config = SimpleNamespace(stash={})
    config.stash[parallel.LOCKS] = window = parallel.RunLocks(tmp_path)
    tracker = Tracker(None)
    parallel.guard(config, tracker)
    window.begin(False, shard="s0")
    window.need_devices()
    other = parallel.RunLocks(tmp_path)
    other.begin(False)
    got = threading.Event()
    threading.Thread(target=lambda: (other.need_devices(), got.set()), daemon=True).start()
    assert not got.wait(0.3), "the window test holds its shard of the device lock"
    seen = []
    tracker.before_release.append(lambda: seen.append(window._device_fd is not None))  # e.g. the invariants
    tracker.release_devices()  # nothing tracked: nothing to delete, then the callbacks
    assert seen == [True], "before_release runs while the test still holds its devices (before the deletes)"
    assert got.wait(10) and other.kind == "devices"
    assert window._run_fd is not None and window._device_fd is None
    assert window.devices_until >= window.devices_at > 0 and window.kind == "shard"
    other.end()
    window.end()
    window.begin(False)
    assert window.devices_until == 0.0  # per test
    window.end()


def test_exclusive_means_the_cluster_state_group():
    def item(*groups):
        marks = [SimpleNamespace(args=(g,), kwargs={}) for g in groups]
        return SimpleNamespace(iter_markers=lambda name: marks if name == "xdist_group" else [])

    assert parallel.is_exclusive(item("dra-cluster-state")) and not parallel.is_exclusive(item("other"))
    assert not parallel.is_exclusive(item())


# -- the wait clock ---------------------------------------------------------------------------------------
def test_clock_counts_the_outermost_wait_once():
    before = clock.total()
    core.poll(lambda: core.poll(lambda: False, timeout=0.2, interval=0.05, scale=False), timeout=0.1, interval=0.1)
    waited = clock.total() - before
    assert 0.18 <= waited < 0.35, waited  # one outer poll of ~0.2 s (the inner poll's 0.2 s not added again)


# -- timings ----------------------------------------------------------------------------------------------
def _report(nodeid, when, duration, outcome="passed", wait=0.0, queued=0.0, before=0.0, worker="gw0", lock=""):
    return SimpleNamespace(
        nodeid=nodeid,
        when=when,
        duration=duration,
        outcome=outcome,
        passed=outcome == "passed",
        failed=outcome == "failed",
        dra_wait_s=wait,
        dra_queued_s=queued,
        dra_queued_before_s=before,
        dra_lock=lock,
        node=SimpleNamespace(gateway=SimpleNamespace(id=worker)),
    )


def _tests():
    tests: dict[str, dict] = {}
    for rep in (
        _report("a.py::slow", "setup", 1.0, wait=0.5, queued=2.0, before=2.0),
        _report("a.py::slow", "call", 8.0, wait=6.0, queued=1.0),
        _report("a.py::slow", "teardown", 1.0, wait=1.0, lock="devices"),
        _report("b.py::fast", "setup", 0.1, worker="gw1"),
        _report("b.py::fast", "call", 0.9, outcome="failed", wait=0.4, worker="gw1"),
        _report("b.py::fast", "teardown", 0.0, worker="gw1", lock="exclusive"),
        _report("c.py::skipped", "setup", 0.0, outcome="skipped"),
        _report("c.py::skipped", "teardown", 0.0),
        _report("a.py::invariants", "call", 0.0),
    ):
        timings.add_report(tests, rep)
    return tests


def test_phase_reports_fold_into_one_record_per_test_with_outcome_and_worker():
    tests = _tests()
    assert set(tests) == {"a.py::slow", "b.py::fast", "c.py::skipped"}
    slow = tests["a.py::slow"]
    assert (slow["duration_s"], slow["wait_s"], slow["queued_s"], slow["queued_before_s"]) == (10.0, 7.5, 3.0, 2.0)
    assert (slow["outcome"], slow["worker"], slow["lock"]) == ("passed", "gw0", "devices")
    assert (tests["b.py::fast"]["outcome"], tests["b.py::fast"]["worker"]) == ("failed", "gw1")
    assert tests["c.py::skipped"]["outcome"] == "skipped"


def test_summary_gives_shares_of_test_time_and_the_slowest_first():
    doc = timings.summarize(_tests(), wall_s=5.5, bring_up_s=30.0, workers=2, top=2)
    assert (doc["tests"], doc["test_time_s"], doc["wait_s"], doc["workers"]) == (3, 11.0, 7.9, 2)
    # harness = duration - cluster waits - lock waits inside the phases (the 2 s before setup are outside)
    assert doc["harness_s"] == pytest.approx(11.0 - 7.9 - 1.0)
    assert doc["wait_share"] == pytest.approx(7.9 / 11, abs=1e-4)
    assert doc["queued_share"] == pytest.approx(1 / 11, abs=1e-4) and doc["queued_s"] == 3.0
    assert doc["parallelism"] == 2.0
    assert doc["serialized_s"] == {"devices": 9.0, "exclusive": 1.0, "shard": 0.0}  # own time less in-phase queueing
    assert [r["id"] for r in doc["slowest"]] == ["a.py::slow", "b.py::fast"]
    assert [r["id"] for r in doc["all"]] == ["a.py::slow", "b.py::fast", "c.py::skipped"]
    text = "\n".join(timings.lines(doc))
    assert "3 tests in 6s wall on 2 xdist worker(s)" in text and "waiting on the cluster 8s (72%)" in text


def test_overlaps_name_tests_that_should_not_have_run_together():
    rows = [
        {"id": "alone", "lock": "exclusive", "start": 10.0, "stop": 20.0, "devices_at": 0.0},
        {"id": "api", "lock": "shared", "start": 21.0, "stop": 40.0, "devices_at": 0.0},
        {"id": "pods1", "lock": "devices", "start": 21.0, "stop": 30.0, "devices_at": 22.0},
        {"id": "pods2", "lock": "devices", "start": 22.0, "stop": 35.0, "devices_at": 30.5},
        {"id": "untimed", "lock": "exclusive"},
    ]
    assert timings.overlaps(rows) == []  # pods2 set up early but took the device lock after pods1's end
    rows[3]["devices_at"] = 29.0
    rows.append({"id": "late", "lock": "exclusive", "start": 39.0, "stop": 41.0, "devices_at": 0.0})
    assert timings.overlaps(rows) == [
        "api and late (one ran alone)",
        "pods1 and pods2 (both started pods)",
    ]
    rows[2]["devices_until"] = 28.5  # pods1 gave its devices back before pods2 took them
    assert timings.overlaps(rows) == ["api and late (one ran alone)"]


def test_empty_run_has_zero_shares():
    doc = timings.summarize({}, wall_s=0.0, bring_up_s=0.0, workers=0)
    assert (doc["wait_share"], doc["parallelism"], doc["slowest"]) == (0.0, 0.0, [])


def test_run_wall_is_added_and_summary_md_gets_one_line(tmp_path):
    timings.add_run_wall(tmp_path, 12.0)  # no timings.json: nothing to add
    assert not (tmp_path / timings.FILE).exists()
    doc = timings.summarize(_tests(), wall_s=5.5, bring_up_s=30.0, workers=2)
    (tmp_path / timings.FILE).write_text(json.dumps(doc))
    timings.add_run_wall(tmp_path, 95.4)
    saved = json.loads((tmp_path / timings.FILE).read_text())
    assert saved["run_wall_s"] == 95.4
    line = markdown.timings_line(saved)
    assert line.startswith("- Timings: run 95s wall (bring-up 30s), tests 6s wall on 2 xdist worker(s)")
    assert "72% waiting on the cluster" in line and "timings.json" in line


def test_controller_removes_the_lock_files_at_the_end(tmp_path):
    locks = parallel.RunLocks(tmp_path)
    locks.begin(False)
    locks.need_devices()
    locks.end()
    assert (tmp_path / parallel.RUN_LOCK).exists() and (tmp_path / parallel.DEVICE_LOCK).exists()
    parallel.LockFilesCleanup(tmp_path).pytest_sessionfinish(session=None)
    assert list(tmp_path.iterdir()) == []
