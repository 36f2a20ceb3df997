"""The matrix decision (no cluster): caught / missed / not-run / unexpected-fail per (fault, test), fault status,
detection rate and the verdict's reasons; healthy runs grouped over the union of the selections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conformance_tools.validation import runs, verdict
from conformance_tools.validation.faultfile import FaultEntry
from conformance_tools.validation.verdict import RunResult

A, B, C = "suites/s.py::test_a", "suites/s.py::test_b", "suites/t.py::test_c"


def _entry(name="prepare-error", expect=(A,), select=("suites/s.py",), **kw) -> FaultEntry:
    return FaultEntry(name, "class", tuple(select), tuple(expect), **kw)


def test_expected_failure_is_caught_and_other_failures_are_unexpected():
    run = RunResult("f", 1, {A: "failed", B: "broken", C: "passed", "suites/t.py::test_d": "skipped"}, 3.0)
    assert verdict.cells(_entry(), run) == {A: "caught", B: "unexpected-fail", C: "passed"}
    row = verdict.fault_row(_entry(), run)
    assert (row["status"], row["caughtBy"], row["unexpectedFail"]) == ("caught", [A], [B])


def test_expected_test_that_passes_or_does_not_run_fails_the_matrix():
    entry = _entry(expect=(A, B, C))
    run = RunResult("prepare-error", 1, {A: "failed", B: "passed"}, 3.0)
    healthy = RunResult("healthy", 0, {A: "passed", B: "passed", C: "passed"}, 3.0)
    data = verdict.decide([entry], {"prepare-error": run}, [healthy])
    row = data["faults"][0]
    assert (row["status"], row["missed"], row["notRun"]) == ("partial", [B], [C])
    assert data["verdict"] == "FAIL"
    assert f"fault prepare-error: expected test passed with the fault on: {B}" in data["verdictReasons"]
    assert any("did not run" in r and C in r for r in data["verdictReasons"]), data["verdictReasons"]
    assert data["detection"]["caught"] == 0 and data["detection"]["notCaught"] == ["prepare-error"]
    assert data["detection"]["byStatus"]["partial"] == 1


def test_fault_caught_by_no_test_fails_the_matrix():
    run = RunResult("prepare-error", 0, {A: "passed"}, 3.0)
    data = verdict.decide([_entry()], {"prepare-error": run}, [RunResult("healthy", 0, {A: "passed"}, 1.0)])
    assert data["faults"][0]["status"] == "missed" and data["detection"]["notCaught"] == ["prepare-error"]
    assert data["verdict"] == "FAIL" and data["verdictReasons"][0].startswith("fault prepare-error: caught by no test")


def test_run_without_results_is_an_error_not_a_catch():
    run = RunResult("no-slices", 3, {}, 3.0, report_dir="/r/no-slices")
    data = verdict.decide([_entry("no-slices")], {"no-slices": run}, [RunResult("healthy", 0, {A: "passed"}, 1.0)])
    assert data["faults"][0]["status"] == "error" and data["detection"]["caught"] == 0
    assert "no test results (exit 3 (cluster or driver not usable))" in data["verdictReasons"][0]


def test_healthy_failure_and_unproven_expectation_fail_the_matrix():
    run = RunResult("prepare-error", 1, {A: "failed", B: "failed"}, 3.0)
    healthy = RunResult("healthy", 1, {A: "skipped", B: "failed"}, 3.0, messages={B: "AssertionError: boom"})
    data = verdict.decide([_entry(expect=(A, B))], {"prepare-error": run}, [healthy])
    assert data["verdict"] == "FAIL"
    assert f"healthy driver: {B} failed: AssertionError: boom" in data["verdictReasons"]
    assert f"healthy driver: expected test did not run, so its catch is unproven: {A}" in data["verdictReasons"]
    assert data["healthy"][0]["failures"] == {B: "AssertionError: boom"}


def test_all_caught_and_healthy_green_passes_with_the_matrix_columns():
    entries = [_entry(), _entry("skip-cdi-env", expect=(B,))]
    fault_runs = {
        "prepare-error": RunResult("prepare-error", 1, {A: "failed", B: "passed"}, 30.0),
        "skip-cdi-env": RunResult("skip-cdi-env", 1, {A: "failed", B: "failed"}, 20.0),
    }
    data = verdict.decide(entries, fault_runs, [RunResult("healthy", 0, {A: "passed", B: "passed"}, 9.0)])
    assert data["verdict"] == "PASS" and data["verdictReasons"] == [], data["verdictReasons"]
    assert data["tests"] == [A, B]
    assert data["faults"][1]["cells"] == {A: "unexpected-fail", B: "caught"}
    assert data["detection"]["rate"] == 1.0 and [r["durationS"] for r in data["faults"]] == [30.0, 20.0]


def test_without_a_healthy_run_the_matrix_fails():
    data = verdict.decide([_entry()], {"prepare-error": RunResult("p", 1, {A: "failed"}, 1.0)}, [])
    assert data["verdict"] == "FAIL" and any("no healthy run" in r for r in data["verdictReasons"])


def test_healthy_runs_cover_the_union_once_per_run_configuration(tmp_path: Path):
    entries = [
        _entry("a", select=("suites/node", "suites/smoke/test_smoke.py::test_x"), timeout_scale=0.5),
        _entry("b", select=("suites/node/test_prepare.py", "suites/smoke/test_smoke.py"), timeout_scale=0.2),
        _entry("c", select=("suites/api_v1",), profile="disruptive"),
    ]
    plans = runs.healthy_plans(entries, tmp_path)
    assert [(p.label, p.select, p.timeout_scale, p.faults) for p in plans] == [
        ("healthy", ("suites/node", "suites/smoke/test_smoke.py"), 0.2, ""),
        ("healthy-2", ("suites/api_v1",), 1.0, ""),
    ]
    cmd = runs.command(plans[1], ["--k8s-version", "1.35"], python="py")
    assert cmd[:3] == ["py", "-m", "conformance.cli"] and "--allow-disruptive" in cmd
    assert cmd[cmd.index("--workers") + 1] == "0"  # validation runs stay serial
    assert cmd[cmd.index("--report-dir") + 1] == str(tmp_path / "healthy-2") and cmd[-2:] == ["--", "suites/api_v1"]


def test_child_environment_sets_or_clears_the_fault(tmp_path: Path):
    faulty = runs.fault_plan(_entry("skip-cdi-env"), tmp_path)
    healthy = runs.healthy_plans([_entry("skip-cdi-env")], tmp_path)[0]
    inherited = {"DRA_REFERENCE_FAULTS": "prepare-error", "PATH": "/bin"}
    assert runs.environment(faulty, inherited)["DRA_REFERENCE_FAULTS"] == "skip-cdi-env"
    assert "DRA_REFERENCE_FAULTS" not in runs.environment(healthy, inherited)


def test_run_refused_before_any_test_is_a_setup_result(tmp_path: Path):
    plan = runs.fault_plan(_entry("no-slices", expect=("run::setup",)), tmp_path)
    plan.report_dir.mkdir()
    (plan.report_dir / "run.log").write_text(
        "!!! _pytest.outcomes.Exit: dra-conformance: DriverNotReady: driver 'x' not ready: ResourceSlices !!!\n"
    )
    result = runs.read_result(plan, 3, 40.0, "", ["dra-conformance", "run"])
    assert result.tests == {"run::setup": "broken"}
    assert result.messages["run::setup"] == "DriverNotReady: driver 'x' not ready: ResourceSlices"
    healthy = RunResult("healthy", 0, {A: "passed"}, 1.0)
    data = verdict.decide([_entry("no-slices", expect=("run::setup",))], {"no-slices": result}, [healthy])
    assert data["faults"][0]["status"] == "caught" and data["verdict"] == "PASS", data["verdictReasons"]


LEAK = "conformance.core.errors.LeakError: 1 object(s) survived the test's teardown: ResourceClaim t/c"
TIMEOUT = "conformance.core.errors.WaitTimeout: timed out after 60s waiting for pod t/p Running"
PREPARE = "conformance.core.errors.WaitFailed: while waiting for pod t/p Running: kubelet could not prepare"
SURVIVED = "AssertionError: the claim's CDI spec survived its unprepare"


@pytest.mark.parametrize(
    ("message", "cls", "cell", "why"),
    [
        (PREPARE, "driver-defect", "caught", ""),
        (PREPARE.upper(), "driver-defect", "caught", ""),  # case-insensitive
        (LEAK, "driver-defect", "caught-by-accident", "teardown leak: the test's own checks passed"),
        (TIMEOUT, "infrastructure", "caught-by-accident", "timeout: the failure does not show the symptom"),
        ("KeyError: 'items'", "suite-error", "caught-by-accident", "crash: the failure does not show"),
        ("AssertionError: other", "driver-defect", "caught-by-accident", "other message: the failure"),
        ("", "suite-error", "caught-by-accident", "no message: the failure does not show"),
    ],
)
def test_only_a_failure_with_the_symptom_is_caught(message, cls, cell, why):
    run = RunResult("prepare-error", 1, {A: "failed"}, 3.0, messages={A: message[:40]}, details={A: message})
    entry = _entry(symptom="could not prepare")
    assert verdict.cells(entry, run) == {A: cell}
    assert verdict.accident(entry, run, A).startswith(why) and (why or not verdict.accident(entry, run, A))


def test_symptom_class_and_per_test_symptom_are_judged():
    run = RunResult(
        "p", 1, {A: "failed", B: "broken"}, 3.0, messages={A: TIMEOUT, B: SURVIVED}, classes={A: "infrastructure"}
    )
    entry = _entry(expect=(A, B), symptom="timed out", symptom_class="driver-defect", symptoms={B: "survived"})
    assert verdict.cells(entry, run) == {A: "caught-by-accident", B: "caught"}
    assert verdict.accident(entry, run, A) == "failure class infrastructure, not the symptom's driver-defect"
    row = verdict.fault_row(entry, run)
    assert (row["status"], row["caughtBy"], list(row["accidents"])) == ("partial", [B], [A])


def test_fault_caught_only_by_accident_does_not_count(tmp_path: Path):
    """A recorded child run (Allure results as a run writes them): the expected test failed, but by a leak."""
    entry = _entry(expect=(A,), symptom="kubelet could not prepare")
    plan = runs.fault_plan(entry, tmp_path)
    (plan.report_dir / "allure-results").mkdir(parents=True)
    record = {
        "name": "test_a",
        "fullName": "suites.s#test_a",
        "status": "broken",
        "statusDetails": {"message": LEAK + "\n  the driver never unprepared it\n  kubelet could not prepare"},
        "labels": [{"name": "nodeid", "value": A}, {"name": "failure_class", "value": "driver-defect"}],
    }
    (plan.report_dir / "allure-results" / "1-result.json").write_text(json.dumps(record))
    result = runs.read_result(plan, 1, 9.0, "", ["dra-conformance", "run"])
    assert result.messages[A] == LEAK and result.classes == {A: "driver-defect"}
    assert result.details[A].endswith("kubelet could not prepare")  # later lines are searched, but:
    assert verdict.fault_row(entry, result)["status"] == "caught-by-accident"  # a teardown leak is never a catch
    strict = _entry(expect=(A,), symptom="^conformance.core.errors.WaitFailed")
    data = verdict.decide([strict], {"prepare-error": result}, [RunResult("healthy", 0, {A: "passed"}, 1.0)])
    assert data["faults"][0]["status"] == "caught-by-accident" and data["verdict"] == "FAIL"
    assert data["detection"]["caught"] == 0 and data["detection"]["byStatus"]["caught-by-accident"] == 1
    assert (
        data["verdictReasons"][0] == f"fault prepare-error: caught by no test with its symptom (exit 1 (fail)); "
        f"expected to fail: {A}"
    )
    assert data["verdictReasons"][1].startswith(
        f"fault prepare-error: caught by accident (does not count): {A}: teardown leak"
    )
