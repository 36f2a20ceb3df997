"""The matrix decision: per (fault, test) caught / missed / not-run / unexpected-fail, per fault its status, and
the matrix verdict. Pure: inputs are :class:`RunResult` values, outputs plain dicts (summary.json parts).

Rules (issue 11 "Fault matrix", issue 24 §5; design.md §11): an expected test is *caught* only when it fails
with the fault's symptom (its regex found in the failure message, and its failure class when the file names
one); one failing otherwise (an unrelated timeout, a teardown leak, a crash, another message) is
*caught-by-accident* and does not count. The matrix FAILS when a fault is caught by no test, when an expected
test is caught by accident, passes (or does not run) with the fault on, when a fault's run ended
without results (setup error, timeout), when the healthy driver has any failure, or when an expected test
did not pass on the healthy driver (a catch is proven only against a passing healthy run). A test that fails
under a fault without being listed is reported as ``unexpected-fail`` (list it in the file) but does not
fail the matrix.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

from conformance_tools.validation.faultfile import SETUP_RESULT, FaultEntry, expected_matches

CAUGHT, MISSED, NOT_RUN, UNEXPECTED, PASSED = "caught", "missed", "not-run", "unexpected-fail", "passed"
ACCIDENT = "caught-by-accident"
# what an unrelated failure looks like (the accident's kind in the report): first match of the message wins
ACCIDENT_KINDS = (
    ("teardown leak", re.compile(r"LeakError|survived (the )?teardown|leak", re.I)),
    ("timeout", re.compile(r"WaitTimeout|Timeout|timed out", re.I)),
    ("crash", re.compile(r"Traceback|INTERNALERROR|Segmentation|core dumped|(Key|Type|Attribute|Name)Error", re.I)),
)
# a test whose body passed and whose teardown found a leak: never a catch, whatever else its text says (the
# tracker's LeakError names CDI specs and "still prepared on node", which a loose symptom would match; breaker
# finding 3)
TEARDOWN_LEAK = re.compile(r"LeakError|survived (the )?(test's )?teardown", re.I)
FAILED_STATUSES = ("failed", "broken")
EXIT_TEXT = {0: "pass", 1: "fail", 2: "interrupted", 3: "cluster or driver not usable", 4: "bad input", 5: "no tests"}


@dataclasses.dataclass(frozen=True)
class RunResult:
    """One child run. ``label``: fault name or ``healthy``; ``exit_code``: of `dra-conformance run` (None when
    it never ended); ``tests``: node ID -> Allure status (passed|failed|broken|skipped|unknown); ``messages``:
    node ID -> first line of the failure or skip reason; ``duration_s``: wall time in seconds; ``note``:
    ``timed out`` / ``interrupted`` or ''; ``report_dir``, ``command``: where and how it ran; ``details``: node
    ID -> the first lines of the failure message (what a symptom is searched in; falls back to ``messages``);
    ``classes``: node ID -> failure class (conformance/reporting/classify.py) of a failed test."""

    label: str
    exit_code: int | None
    tests: Mapping[str, str]
    duration_s: float
    messages: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""
    report_dir: str = ""
    command: str = ""
    details: Mapping[str, str] = dataclasses.field(default_factory=dict)
    classes: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def failed(self) -> list[str]:
        """Node IDs that failed or broke, sorted."""
        return sorted(n for n, s in self.tests.items() if s in FAILED_STATUSES)

    def ended_text(self) -> str:
        """``exit 1 (fail)`` or the note."""
        if self.note:
            return self.note
        return f"exit {self.exit_code} ({EXIT_TEXT.get(self.exit_code, 'error')})"


def accident(entry: FaultEntry, run: RunResult, nodeid: str) -> str:
    """'' when the failure of ``nodeid`` in ``run`` shows ``entry``'s symptom (regex searched case-insensitive in
    its failure text; the failure class too when ``entry.symptom_class`` is set); otherwise why it is an accident,
    one line: ``<kind>: <what was expected>`` (kind: teardown leak | timeout | crash | other message). A teardown
    leak (:data:`TEARDOWN_LEAK`) is an accident before the symptom is tried: the test's own check passed."""
    text = run.details.get(nodeid) or run.messages.get(nodeid, "")
    regex = entry.symptom_for(nodeid)
    found_class = run.classes.get(nodeid, "")
    if TEARDOWN_LEAK.search(text):
        return "teardown leak: the test's own checks passed and its teardown failed; a leak is never the symptom"
    if regex and not re.search(regex, text, re.I | re.M):
        kind = next((k for k, rx in ACCIDENT_KINDS if rx.search(text)), "other message" if text else "no message")
        return f"{kind}: the failure does not show the symptom /{regex}/"
    if entry.symptom_class and found_class and found_class != entry.symptom_class:
        return f"failure class {found_class}, not the symptom's {entry.symptom_class}"
    return ""


def cells(entry: FaultEntry, run: RunResult) -> dict[str, str]:
    """Node ID (or an expect pattern nothing matched) -> cell state for one fault's run: an expected test that
    failed is :data:`CAUGHT` with the symptom, :data:`ACCIDENT` without (:func:`accident`). Tests that passed
    without being expected are :data:`PASSED`; skipped unexpected tests are left out."""
    out: dict[str, str] = {}
    for nodeid, status in sorted(run.tests.items()):
        expected = any(expected_matches(p, nodeid) for p in entry.expect)
        failed = status in FAILED_STATUSES
        if expected and failed:
            out[nodeid] = ACCIDENT if accident(entry, run, nodeid) else CAUGHT
        elif expected:
            out[nodeid] = MISSED if status == "passed" else NOT_RUN
        elif failed:
            out[nodeid] = UNEXPECTED
        elif status == "passed":
            out[nodeid] = PASSED
    for pattern in entry.expect:
        if not any(expected_matches(pattern, n) for n in run.tests):
            out[pattern] = NOT_RUN
    return out


def fault_row(entry: FaultEntry, run: RunResult, description: str = "") -> dict:
    """The summary row of one fault: status (caught | partial | caught-by-accident | missed | error: caught =
    every expected test failed with the symptom; partial = some did; caught-by-accident = none did but some
    failed otherwise), the tests per cell state (``accidents``: node ID -> why), its symptom, its duration and
    how its run ended."""
    by_cell = cells(entry, run)
    pick = lambda state: sorted(n for n, c in by_cell.items() if c == state)  # noqa: E731
    caught, missed, not_run, unexpected = pick(CAUGHT), pick(MISSED), pick(NOT_RUN), pick(UNEXPECTED)
    accidents = {n: accident(entry, run, n) for n in pick(ACCIDENT)}
    if not run.tests:
        status = "error"
    elif caught and not missed and not not_run and not accidents:
        status = "caught"
    elif caught:
        status = "partial"
    else:
        status = ACCIDENT if accidents else "missed"
    return {
        "name": entry.name,
        "class": entry.failure_class,
        "description": description,
        "status": status,
        "caughtBy": caught,
        "missed": missed,
        "notRun": not_run,
        "unexpectedFail": unexpected,
        "accidents": accidents,
        "symptom": entry.symptom,
        "symptomClass": entry.symptom_class,
        "durationS": round(run.duration_s, 1),
        "exitCode": run.exit_code,
        "ended": run.ended_text(),
        "reportDir": run.report_dir,
        "command": run.command,
        "cells": by_cell,
        "messages": {n: run.messages.get(n, "") for n in caught + list(accidents) + unexpected + missed},
    }


def healthy_row(run: RunResult) -> dict:
    """The summary row of one healthy run: counts, failures with their first message line."""
    counts: dict[str, int] = {}
    for status in run.tests.values():
        counts[status] = counts.get(status, 0) + 1
    return {
        "label": run.label,
        "exitCode": run.exit_code,
        "ended": run.ended_text(),
        "durationS": round(run.duration_s, 1),
        "counts": counts,
        "failures": {n: run.messages.get(n, "") for n in run.failed()},
        "reportDir": run.report_dir,
        "command": run.command,
    }


def _fault_reasons(row: dict) -> list[str]:
    name, out = row["name"], []
    if row["status"] == "error":
        out.append(f"fault {name}: its run produced no test results ({row['ended']}); see {row['reportDir']}")
    elif not row["caughtBy"]:
        expected = ", ".join(row["missed"] + row["notRun"] + list(row["accidents"]))
        out.append(f"fault {name}: caught by no test with its symptom ({row['ended']}); expected to fail: {expected}")
    for nodeid, why in row["accidents"].items():
        message = row["messages"].get(nodeid, "")[:160]
        out.append(f"fault {name}: caught by accident (does not count): {nodeid}: {why}; it failed with: {message}")
    for nodeid in row["missed"] if row["caughtBy"] else []:
        out.append(f"fault {name}: expected test passed with the fault on: {nodeid}")
    for nodeid in row["notRun"] if row["status"] != "error" else []:
        out.append(f"fault {name}: expected test did not run (skipped or not selected): {nodeid}")
    return out


def _healthy_reasons(runs: Iterable[RunResult], entries: Iterable[FaultEntry]) -> list[str]:
    out, statuses = [], {}
    for run in runs:
        statuses.update(run.tests)
        for nodeid in run.failed():
            out.append(f"healthy driver: {nodeid} {run.tests[nodeid]}: {run.messages.get(nodeid, '')}".rstrip(": "))
        if run.exit_code != 0 and not run.failed():
            out.append(f"healthy driver: run {run.label} ended {run.ended_text()} (see {run.report_dir})")
        if not run.tests:
            out.append(f"healthy driver: run {run.label} produced no test results")
    unproven = set()
    for entry in entries:
        for pattern in (p for p in entry.expect if p != SETUP_RESULT):
            matched = [n for n in statuses if expected_matches(pattern, n)]
            if statuses and (not matched or any(statuses[n] == "skipped" for n in matched)):
                unproven.add(pattern)
    out += [f"healthy driver: expected test did not run, so its catch is unproven: {p}" for p in sorted(unproven)]
    return out


def decide(
    entries: list[FaultEntry],
    fault_runs: Mapping[str, RunResult],
    healthy_runs: list[RunResult],
    descriptions: Mapping[str, str] | None = None,
) -> dict:
    """The matrix: ``faults`` rows (file order), ``healthy`` rows, ``tests`` (matrix columns: every test
    expected or failing somewhere), ``detection`` (caught faults / faults, rate), ``verdict`` and
    ``verdictReasons``. Faults without a run in ``fault_runs`` (an interrupted matrix) are left out."""
    rows = [
        fault_row(e, fault_runs[e.name], (descriptions or {}).get(e.name, "")) for e in entries if e.name in fault_runs
    ]
    healthy = [healthy_row(r) for r in healthy_runs]
    reasons = [r for row in rows for r in _fault_reasons(row)]
    reasons += _healthy_reasons(healthy_runs, [e for e in entries if e.name in fault_runs])
    if not healthy_runs and rows:
        reasons.append("no healthy run: nothing proves the expected tests pass on a healthy driver")
    columns = sorted({n for row in rows for n, c in row["cells"].items() if c != PASSED})
    caught = [row["name"] for row in rows if row["status"] == CAUGHT]  # only a catch with the symptom counts
    return {
        "faults": rows,
        "healthy": healthy,
        "tests": columns,
        "detection": {
            "faults": len(rows),
            "caught": len(caught),
            "rate": round(len(caught) / len(rows), 3) if rows else 0.0,
            "notCaught": [row["name"] for row in rows if row["status"] != CAUGHT],
            "byStatus": {
                s: sum(r["status"] == s for r in rows) for s in (CAUGHT, "partial", ACCIDENT, MISSED, "error")
            },
        },
        "verdict": "FAIL" if reasons or not rows else "PASS",
        "verdictReasons": reasons or ([] if rows else ["no fault was run"]),
    }
