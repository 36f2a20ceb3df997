"""junit.xml: one testcase per test with unique names, even with rerun duplicates."""

from __future__ import annotations

import collections

from conformance.reporting import junit, results

RERUN_XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="suites.test_a" name="test_x" time="1.0"/>
<testcase classname="suites.test_a" name="test_y" time="2.0"><failure message="first">t</failure></testcase>
<testcase classname="suites.test_a" name="test_y" time="2.5"><failure message="second">t</failure></testcase>
</testsuite></testsuites>
"""


def test_sample_run_junit_has_one_unique_case_per_test(failing_run):
    found = junit.cases(failing_run / "junit.xml")
    keys = [(c, n) for c, n, _ in found]
    assert len(keys) == len(set(keys)) == 4, found
    outcomes = collections.Counter(o for _, _, o in found)
    assert outcomes == {"passed": 1, "failure": 1, "error": 1, "skipped": 1}, outcomes


def test_normalise_drops_rerun_duplicates_keeping_the_last(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(RERUN_XML)
    assert junit.normalise(path, "dra k8s-1.35") == {"tests": 2, "duplicates_removed": 1}
    found = junit.cases(path)
    assert [(n, o) for _, n, o in found] == [("test_x", "passed"), ("test_y", "failure")]
    assert 'message="second"' in path.read_text() and 'failures="1"' in path.read_text()
    assert junit.normalise(path, "dra k8s-1.35")["duplicates_removed"] == 0


def test_junit_is_built_from_allure_results_when_pytest_wrote_none(failing_run, tmp_path):
    records = results.load(failing_run / "allure-results")
    junit.from_records(records, tmp_path / "j.xml", "x")
    assert sorted(o for _, _, o in junit.cases(tmp_path / "j.xml")) == ["error", "failure", "passed", "skipped"]


def test_xdist_run_has_unique_cases_and_one_result_per_test(tmp_path):
    """Under pytest-xdist the controller writes JUnit and each worker writes Allure results; the report
    still has one entry per test."""
    from tests.reporting.conftest import run_sample

    proc = run_sample(tmp_path, "-n", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    from conformance.reporting import build

    build.generate(tmp_path, html_report=False)
    found = junit.cases(tmp_path / "junit.xml")
    assert len(found) == len({(c, n) for c, n, _ in found}) == 4
    records = results.load(tmp_path / "allure-results")
    assert len(records) == 4 and len({r.label("thread").split("-")[0] for r in records}) == 2


def test_allure_retries_collapse_to_one_record_that_is_failed_when_any_attempt_failed(tmp_path):
    """pytest-rerunfailures (or a reused results dir) writes one Allure result per attempt: one record per test,
    and a test that failed and then passed on a retry is failed, its message naming the attempts (breaker s15
    C1: flaky is not a pass)."""
    import json

    base = {"name": "t", "fullName": "m#t", "historyId": "h1", "labels": [], "parameters": []}
    details = {"message": "AssertionError: device leaked\nmore", "trace": "tb"}
    for i, (status, stop) in enumerate((("failed", 10), ("passed", 20))):
        extra = {"statusDetails": details} if status == "failed" else {}
        (tmp_path / f"{i}-result.json").write_text(
            json.dumps({**base, "status": status, "start": stop - 1, "stop": stop, **extra})
        )
    (rec,) = results.load(tmp_path)
    assert (rec.status, rec.retries, rec.trace) == ("failed", 1, "tb")
    assert rec.message == (
        "failed on attempt 1 of 2: AssertionError: device leaked; passed on a retry: flaky is not a pass"
    )
    (tmp_path / "2-result.json").write_text(json.dumps({**base, "status": "passed", "start": 29, "stop": 30}))
    (tmp_path / "0-result.json").write_text(json.dumps({**base, "status": "passed", "start": 9, "stop": 10}))
    (rec,) = results.load(tmp_path)
    assert (rec.status, rec.retries) == ("passed", 2)  # passed every time: a pass


def test_normalise_fails_a_case_that_passed_only_on_a_retry(tmp_path):
    """junit.xml keeps the last attempt, but a failed earlier attempt makes it a failure (breaker s15 C1)."""
    path = tmp_path / "junit.xml"
    path.write_text(
        RERUN_XML.replace('<failure message="second">t</failure></testcase>', "</testcase>").replace(
            'name="test_x" time="1.0"/>',
            'name="test_x" time="1.0"><error message="boom">e</error></testcase>'
            '<testcase classname="suites.test_a" name="test_x" time="1.0"/>',
        )
    )
    assert junit.normalise(path, "dra") == {"tests": 2, "duplicates_removed": 2}
    assert [(n, o) for _, n, o in junit.cases(path)] == [("test_x", "failure"), ("test_y", "failure")]
    text = path.read_text()
    assert "failed on attempt 1 of 2: boom; passed on a retry: flaky is not a pass" in text
    assert "failed on attempt 1 of 2: first; passed on a retry: flaky is not a pass" in text
    assert 'failures="2"' in text
