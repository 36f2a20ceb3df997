"""Self-validation of the verdict: the reference driver with one fault switched on must make a real suite
test fail, and the report must say FAIL, name the failing capability and carry the failure's evidence.

Fault ``ignore-claim-config`` (reference_driver/faults.py): opaque configuration from the claim is dropped,
so suites/node/test_isolation.py::test_request_scoped_config_reaches_only_that_request (requires
driver.opaque_config, declared by the reference profile) must fail. Sources: issue 7 acceptance;
reporting.md §4.3 (fail-closed verdict), §4.5 (evidence on failure).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from conformance.reporting import summary
from tests.e2e.preinstalled import reference_driver, start_run

pytestmark = pytest.mark.e2e
FAILING = "test_request_scoped_config_reaches_only_that_request"
PASSING = "test_driver_publishes_slices_with_devices"


@pytest.fixture(scope="module")
def faulty_run(local_cluster, tmp_path_factory):
    """(exit code, output, report dir) of one standard-profile run against the faulty driver."""
    tmp = tmp_path_factory.mktemp("fault-verdict")
    with reference_driver(local_cluster, tmp, faults="ignore-claim-config") as (profile, _k8s):
        report = tmp / "report"
        proc = start_run(
            local_cluster,
            profile,
            report,
            "-k",
            f"{FAILING} or {PASSING}",
            run_args=("--workers", "0"),
            test_profile="standard",
        )
        out, _ = proc.communicate(timeout=900)
    return proc.returncode, out, report


def test_faulty_driver_gets_verdict_fail_naming_the_capability(faulty_run):
    code, out, report = faulty_run
    assert code == 1 and "VERDICT: FAIL" in out, out
    doc = json.loads((report / "summary.json").read_text())
    jsonschema.validate(doc, json.loads(summary.SCHEMA_PATH.read_text()))
    assert doc["verdict"] == "FAIL" and doc["counts"]["failed"] == 1 and doc["counts"]["passed"] == 1, doc["counts"]
    caps = {c["name"]: c for c in doc["capabilities"]}
    assert caps["driver.opaque_config"]["status"] == "fail", caps["driver.opaque_config"]
    assert any("driver.opaque_config" in r for r in doc["verdictReasons"]), doc["verdictReasons"]


def test_failure_carries_evidence_in_allure_junit_and_files(faulty_run):
    _code, out, report = faulty_run
    failed = [t for t in json.loads((report / "summary.json").read_text())["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == [FAILING], failed
    evidence = [p for p in (report / "evidence").rglob("*") if p.is_file()]
    assert any("events" in p.name for p in evidence) and any(p.suffix == ".yaml" for p in evidence), evidence
    results = [json.loads(p.read_text()) for p in (report / "allure-results").glob("*-result.json")]
    bad = [r for r in results if r["status"] == "failed"]
    assert len(bad) == 1 and len(bad[0].get("attachments", [])) >= 3, bad
    cases = ET.parse(report / "junit.xml").getroot().iter("testcase")
    assert sum(1 for c in cases if c.find("failure") is not None) == 1
    assert (report / "allure-report").is_dir() and (report / "summary.md").is_file(), out
