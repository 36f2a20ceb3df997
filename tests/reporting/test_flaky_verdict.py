"""A test that failed and then passed on a retry fails the qualification (breaker s15 C1): its record is failed
with a message naming the attempts, so summary.json's verdict is FAIL and the summary lists the test."""

from __future__ import annotations

import json

from conformance.reporting import results, summary
from tests.reporting.conftest import sample_run_json

BASE = {
    "name": "test_claim_allocated",
    "fullName": "suites.x#test_claim_allocated",
    "historyId": "h1",
    "labels": [{"name": "nodeid", "value": "suites/x.py::test_claim_allocated"}],
}


def _attempts(run_dir, *statuses: str) -> None:
    allure = run_dir / "allure-results"
    allure.mkdir(parents=True)
    run = sample_run_json(declared_capabilities=[], capabilities={})
    (run_dir / "run.json").write_text(json.dumps(run))
    for n, status in enumerate(statuses):
        details = {"message": "AssertionError: device leaked to another container"} if status != "passed" else {}
        result = {**BASE, "status": status, "start": n * 1000, "stop": n * 1000 + 999, "statusDetails": details}
        (allure / f"{n}-result.json").write_text(json.dumps(result))


def test_failed_then_passed_on_a_retry_is_a_fail(tmp_path):
    _attempts(tmp_path, "failed", "passed")
    (rec,) = results.load(tmp_path / "allure-results")
    assert rec.status == "failed" and rec.retries == 1
    data = summary.build(tmp_path)
    assert data["verdict"] == "FAIL", data["verdictLine"]
    assert data["counts"]["failed"] == 1 and data["counts"]["passed"] == 0 and data["counts"]["retried"] == 1
    assert any("test_claim_allocated" in str(r) for r in data["verdictReasons"]), data["verdictReasons"]
    shown = json.dumps(data)
    assert "failed on attempt 1 of 2: AssertionError: device leaked to another container" in shown
    assert "passed on a retry: flaky is not a pass" in shown


def test_broken_twice_then_passed_names_both_attempts(tmp_path):
    _attempts(tmp_path, "broken", "broken", "passed")
    (rec,) = results.load(tmp_path / "allure-results")
    assert rec.status == "failed"  # a driver defect raised as an exception counts failed (results.record_from)
    assert rec.message.startswith("failed on attempts 1, 2 of 3: AssertionError")


def test_passing_every_attempt_stays_passed(tmp_path):
    _attempts(tmp_path, "passed", "passed")
    (rec,) = results.load(tmp_path / "allure-results")
    assert (rec.status, rec.message, rec.retries) == ("passed", "", 1)
