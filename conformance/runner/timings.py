"""Where a run's time goes: per-test durations and the share spent waiting on the cluster, written to
``<report_dir>/timings.json`` and printed at the end of the run (issue 14, "Speed").

Measured in the process that runs the test (an xdist worker, or the only process), per phase
(setup/call/teardown), and carried to the controller on the test reports (attributes ``dra_wait_s``,
``dra_queued_s``, ``dra_queued_before_s``; xdist serialises a report's attributes):

* ``duration_s``: the phases' wall time (pytest's ``report.duration``, summed);
* ``wait_s``: time inside the waits package (:mod:`conformance.k8s.waits.clock`: ``until``/``poll`` and the
  named waits built on them) -- waiting on the cluster;
* ``queued_s``: time waiting for the parallel run's locks (:mod:`conformance.runner.parallel`), of which
  ``queued_before_s`` before the setup (outside ``duration_s``);
* ``harness_s``: the rest of ``duration_s`` (API calls, building objects, checks, reports);
* ``lock``: what the test held under xdist: ``exclusive`` (ran alone), ``devices`` (started pods: one such
  test at a time), ``shard`` (started pods in its device shard ``shard``, a CEL selector over the device
  ``slots`` it held: beside tests holding other slots) or ``shared``. The tests holding ``exclusive`` or
  ``devices`` run one after another, so their own time (``duration_s`` less in-phase queueing) summed is the
  least wall time any worker count can reach (``serialized_s``);
* ``start``/``stop``: epoch seconds of the setup's start and the teardown's end (the run lock is held over
  them), ``devices_at``: when the device lock was taken (0: never) -- enough to check that no two tests that
  must not overlap did.

The controller adds the run's figures: wall time of the test loop, bring-up (the session start: cluster,
driver, capabilities), workers, and the shares of the summed test time (:func:`summarize`). ``dra-conformance
run`` adds the whole run's wall time (``run_wall_s``) after the teardown.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conformance.k8s.waits import clock

FILE = "timings.json"
TOP_N = 10
ATTRS = (
    "dra_wait_s",
    "dra_queued_s",
    "dra_queued_before_s",
    "dra_lock",
    "dra_devices_at",
    "dra_devices_until",
    "dra_shard",
    "dra_slots",
)
SYNTHETIC_SUFFIX = "::invariants"  # results the controller makes per module (no phases of their own)


def add_report(tests: dict[str, dict], report) -> None:
    """Fold one phase report into ``tests`` (node ID -> record). Reads ``report.duration`` (seconds),
    ``when``, ``outcome``, the :data:`ATTRS` attributes (0 when absent) and the xdist worker (``report.node``)."""
    if report.nodeid.endswith(SYNTHETIC_SUFFIX) or report.when not in ("setup", "call", "teardown"):
        return
    rec = tests.setdefault(
        report.nodeid,
        {"id": report.nodeid, "duration_s": 0.0, "wait_s": 0.0, "queued_s": 0.0, "queued_before_s": 0.0},
    )
    rec["duration_s"] += float(report.duration or 0.0)
    rec["wait_s"] += float(getattr(report, "dra_wait_s", 0.0) or 0.0)
    rec["queued_s"] += float(getattr(report, "dra_queued_s", 0.0) or 0.0)
    rec["queued_before_s"] += float(getattr(report, "dra_queued_before_s", 0.0) or 0.0)
    rec["lock"] = getattr(report, "dra_lock", "") or rec.get("lock", "")
    rec["devices_at"] = float(getattr(report, "dra_devices_at", 0.0) or 0.0) or rec.get("devices_at", 0.0)
    rec["devices_until"] = float(getattr(report, "dra_devices_until", 0.0) or 0.0) or rec.get("devices_until", 0.0)
    rec["shard"] = getattr(report, "dra_shard", "") or rec.get("shard", "")
    rec["slots"] = list(getattr(report, "dra_slots", None) or rec.get("slots") or [])
    if report.when == "setup":
        rec["start"] = float(getattr(report, "start", 0.0) or 0.0)
    rec["stop"] = float(getattr(report, "stop", 0.0) or 0.0) or rec.get("stop", 0.0)
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    rec["worker"] = getattr(gateway, "id", None) or rec.get("worker") or "main"
    if report.when == "call" or (report.when == "setup" and not report.passed):
        rec["outcome"] = report.outcome
    elif report.when == "teardown" and report.failed:
        rec["outcome"] = "error"


def overlaps(rows) -> list[str]:
    """Pairs of tests that ran at the same time although they must not: a test that held the run lock
    exclusively overlapping any other, or two tests overlapping while both held the device lock (from
    ``devices_at`` to ``devices_until`` when the test gave it back mid-test, else to ``stop``) unless both held
    it in different device shards (``shard``). Uses ``start``/``stop``/``devices_at``/``devices_until`` (epoch
    seconds); tests without them are ignored. Empty in a correct run (the proof that the locks worked; serial
    runs trivially)."""
    timed = [r for r in rows if r.get("start") and r.get("stop")]
    found = []
    for i, a in enumerate(timed):
        for b in timed[i + 1 :]:
            if "exclusive" in (a.get("lock"), b.get("lock")) and a["start"] < b["stop"] and b["start"] < a["stop"]:
                found.append(f"{a['id']} and {b['id']} (one ran alone)")
            elif a.get("devices_at") and b.get("devices_at") and not _apart(a, b):
                a_end, b_end = a.get("devices_until") or a["stop"], b.get("devices_until") or b["stop"]
                if a["devices_at"] < b_end and b["devices_at"] < a_end:
                    found.append(f"{a['id']} and {b['id']} (both started pods)")
    return found


def _apart(a: dict, b: dict) -> bool:
    """Whether two tests held the device lock in different device shards (so they may overlap): disjoint device
    slots where both recorded them, else different shard selectors."""
    if not (a.get("lock") == b.get("lock") == "shard" and a.get("shard") and b.get("shard")):
        return False
    if a.get("slots") and b.get("slots"):
        return not set(a["slots"]) & set(b["slots"])
    return a.get("shard") != b.get("shard")


def summarize(tests: dict[str, dict], *, wall_s: float, bring_up_s: float, workers: int, top: int = TOP_N) -> dict:
    """The timings document: run figures, totals, shares and the ``top`` slowest tests (longest first), then
    every test by node ID. Seconds everywhere, rounded to 0.01; shares are fractions of the summed test
    time (``duration_s`` of every test: with N workers up to N times the wall time of the test loop)."""
    rows = []
    for rec in tests.values():
        in_phase_queue = max(0.0, rec["queued_s"] - rec["queued_before_s"])
        harness = max(0.0, rec["duration_s"] - rec["wait_s"] - in_phase_queue)
        rows.append({**rec, "harness_s": harness})
    total = sum(r["duration_s"] for r in rows)
    wait = sum(r["wait_s"] for r in rows)
    queued_in = sum(max(0.0, r["queued_s"] - r["queued_before_s"]) for r in rows)
    harness = sum(r["harness_s"] for r in rows)
    serialized = {
        kind: round(
            sum(r["duration_s"] - max(0.0, r["queued_s"] - r["queued_before_s"]) for r in rows if r["lock"] == kind), 2
        )
        for kind in ("exclusive", "devices", "shard")
    }

    def share(x: float) -> float:
        return round(x / total, 4) if total > 0 else 0.0

    def rounded(r: dict) -> dict:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}

    return {
        "workers": workers,
        "tests": len(rows),
        "wall_s": round(wall_s, 2),
        "bring_up_s": round(bring_up_s, 2),
        "test_time_s": round(total, 2),
        "wait_s": round(wait, 2),
        "harness_s": round(harness, 2),
        "queued_s": round(sum(r["queued_s"] for r in rows), 2),
        "wait_share": share(wait),
        "harness_share": share(harness),
        "queued_share": share(queued_in),
        "parallelism": round(total / wall_s, 2) if wall_s > 0 else 0.0,
        "serialized_s": serialized,
        "overlaps": overlaps(rows),
        "slowest": [rounded(r) for r in sorted(rows, key=lambda r: -r["duration_s"])[:top]],
        "all": [rounded(r) for r in sorted(rows, key=lambda r: r["id"])],
    }


def lines(doc: dict) -> list[str]:
    """Terminal lines for a timings document: the totals, then the slowest tests."""
    out = [
        f"{doc['tests']} tests in {doc['wall_s']:.0f}s wall on {doc['workers'] or 'no'} xdist worker(s) "
        f"(bring-up {doc['bring_up_s']:.0f}s); test time {doc['test_time_s']:.0f}s: waiting on the cluster "
        f"{doc['wait_s']:.0f}s ({doc['wait_share']:.0%}), harness {doc['harness_s']:.0f}s "
        f"({doc['harness_share']:.0%}), queued for locks {doc['queued_s']:.0f}s",
    ]
    if doc["workers"]:
        out.append(
            f"one at a time under xdist: tests alone on the cluster {doc['serialized_s']['exclusive']:.0f}s, tests "
            f"starting pods {doc['serialized_s']['devices']:.0f}s (the least wall time any worker count reaches); "
            f"in device shards, beside each other, {doc['serialized_s'].get('shard', 0):.0f}s"
        )
    out += [
        f"slowest {len(doc['slowest'])} tests (duration, of which waiting on the cluster):",
    ]
    out += [f"  {r['duration_s']:6.1f}s (wait {r['wait_s']:5.1f}s) {r['id']}" for r in doc["slowest"]]
    out += [f"OVERLAP (locks failed): {o}" for o in doc.get("overlaps", [])]
    return out


class TimingsPlugin:
    """Measures in every process; collects, writes and prints in the controller (or the only process).
    ``locks``: a callable returning the process's :class:`~conformance.runner.parallel.RunLocks` or None."""

    def __init__(self, config, report_dir: Path, locks) -> None:
        self.config, self.report_dir, self.locks = config, Path(report_dir), locks
        self.is_worker = hasattr(config, "workerinput")
        self.tests: dict[str, dict] = {}
        self.bring_up_s = self.loop_started = self.loop_s = 0.0
        self._wait_mark = self._queue_mark = 0.0
        self.doc: dict | None = None

    def _queued(self) -> float:
        locks = self.locks()
        return locks.queued_s if locks is not None else 0.0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionstart(self, session):
        started = time.monotonic()
        try:
            return (yield)
        finally:
            self.bring_up_s = time.monotonic() - started

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        self.loop_started = time.monotonic()
        self._wait_mark, self._queue_mark = clock.total(), self._queued()
        try:
            return (yield)
        finally:
            self.loop_s = time.monotonic() - self.loop_started

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        wait, queued = clock.total(), self._queued()
        report.dra_wait_s, report.dra_queued_s = wait - self._wait_mark, queued - self._queue_mark
        locks = self.locks()
        report.dra_queued_before_s = locks.queued_before_s if (locks is not None and call.when == "setup") else 0.0
        report.dra_lock = locks.kind if locks is not None else ""
        report.dra_devices_at = locks.devices_at if locks is not None else 0.0
        report.dra_devices_until = locks.devices_until if locks is not None else 0.0
        report.dra_shard = locks.shard if locks is not None and locks.kind == "shard" else ""
        report.dra_slots = list(locks.slots) if locks is not None and locks.kind == "shard" else []
        self._wait_mark, self._queue_mark = wait, queued
        return report

    def pytest_runtest_logreport(self, report):
        if not self.is_worker:
            add_report(self.tests, report)

    def pytest_sessionfinish(self, session):
        if self.is_worker or not self.tests:
            return
        workers = int(getattr(self.config.option, "numprocesses", 0) or 0)
        self.doc = summarize(self.tests, wall_s=self.loop_s, bring_up_s=self.bring_up_s, workers=workers)
        self.report_dir.mkdir(parents=True, exist_ok=True)
        (self.report_dir / FILE).write_text(json.dumps(self.doc, indent=1) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter):
        if self.doc is not None:
            terminalreporter.section("dra-conformance timings")
            for line in lines(self.doc):
                terminalreporter.write_line(line)


def register(config, report_dir: Path, locks) -> None:
    """Register the timings plugin (every process; see :class:`TimingsPlugin`)."""
    config.pluginmanager.register(TimingsPlugin(config, report_dir, locks), "dra_conformance_timings")


def add_run_wall(report_dir: Path, run_wall_s: float) -> None:
    """Record the whole run's wall time (bring-up, tests, teardown) in ``timings.json`` when it exists."""
    path = Path(report_dir) / FILE
    if path.is_file():
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["run_wall_s"] = round(run_wall_s, 2)
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
