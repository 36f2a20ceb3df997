"""Unit tests of the after-module invariant glue (conformance.invariants) without a cluster: a test's claims are
snapshotted, a module is judged against one LIST of slices, outcome files of several xdist workers merge, and
each module becomes one ``<module>::invariants`` result: a pytest report and an Allure result that the summary
reads back (passed with what it judged, or failed with the violations as message and evidence)."""

import json
import types

from conformance import invariants
from conformance.reporting import results
from tests.harness.test_allocation_checks import CLASSES, DRIVER, SLICES, _edit, healthy

MODULE = "suites/allocation/test_example.py"


class FakeK8s:
    """Lists claims per namespace, DeviceClasses and the driver's slices; counts the calls."""

    def __init__(self, claims):
        self.claims, self.calls = claims, []

    def list(self, kind, namespace=None, field_selector=None, version=None):
        self.calls.append((kind, namespace, field_selector))
        if kind == "ResourceClaim":
            return [c for c in self.claims if c.namespace == namespace]
        return {"DeviceClass": list(CLASSES.values()), "ResourceSlice": SLICES}[kind]


def _harness(tmp_path, claims):
    profile = types.SimpleNamespace(attributes={"model": "string", "index": "int"})
    session = types.SimpleNamespace(k8s=FakeK8s(claims), driver=types.SimpleNamespace(name=DRIVER), profile=profile)
    return types.SimpleNamespace(session=session, report_dir=tmp_path)


class FakeConfig:
    """Records the report hooks the glue calls; Allure results go to ``allure``."""

    def __init__(self, allure):
        self.reports = []
        self.hook = self
        self.option = types.SimpleNamespace(allure_report_dir=str(allure))

    def pytest_runtest_logstart(self, nodeid, location):
        pass

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    def pytest_runtest_logfinish(self, nodeid, location):
        pass


def _judge(tmp_path, claims):
    harness = _harness(tmp_path, claims)
    snap = invariants.snapshot(harness.session.k8s, ["ns"], MODULE + "::test_x")
    state = {"snapshots": [snap], "start": 0.0, "tests": 1}
    return harness, invariants.judge(harness, MODULE, state, [["allocation", []], ["standard", []]])


def test_a_healthy_module_adds_no_result_and_records_what_it_judged(tmp_path):
    """A clean module changes no count of the run; invariants.json says what was judged (the check ran)."""
    harness, _path = _judge(tmp_path, healthy())
    kinds = [c[0] for c in harness.session.k8s.calls]
    assert kinds == ["ResourceClaim", "DeviceClass", "ResourceSlice"], kinds  # one LIST of slices per module
    config = FakeConfig(tmp_path / "allure-results")
    invariants.report_all(config, tmp_path)
    assert config.reports == [] and not (tmp_path / "allure-results").exists()
    record = json.loads((tmp_path / "invariants.json").read_text())[MODULE]
    assert record["allocated_claims"] == 3 and record["slices"] == 2 and record["violations"] == [], record


def test_a_violation_fails_the_module_result_with_evidence(tmp_path):
    bad = _edit(healthy(), "pick", "status.allocation.devices.results.0.device", "gpu-0")
    _judge(tmp_path, bad)
    config = FakeConfig(tmp_path / "allure-results")
    invariants.report_all(config, tmp_path)
    call = next(r for r in config.reports if r.when == "call")
    assert call.failed and "allocation.unique-device" in str(call.longrepr) and "gpu-0" in str(call.longrepr)
    (record,) = results.load(tmp_path / "allure-results")
    assert record.status == "failed" and record.failure_class == "driver-defect"
    assert record.message.startswith(f"invariants[{MODULE}]: 1 violation(s)"), record.message
    assert {a["name"] for a in record.attachments} == {"violations.txt", "snapshots.json"}
    assert record.label("nodeid") == MODULE + "::invariants" and record.labels["epic"] == ["allocation"]
    assert list((tmp_path / "evidence").iterdir()), "evidence copied for the summary"


def test_outcomes_of_several_workers_merge_into_one_result(tmp_path):
    bad = _edit(healthy(), "pick", "status.allocation.devices.results.0.device", "gpu-0")
    _judge(tmp_path, bad)
    _judge(tmp_path, bad)
    _judge(tmp_path, healthy())
    (outcome,) = invariants.merged(tmp_path / invariants.FOLDER).values()
    assert outcome["tests"] == 3 and outcome["snapshots"] == 3 and outcome["allocated_claims"] == 9
    assert [v["rule"] for v in outcome["violations"]] == ["allocation.unique-device"]
    assert len(outcome["evidence"]["snapshots"]) == 2


def test_an_unreadable_cluster_is_broken_not_passed(tmp_path):
    harness = _harness(tmp_path, healthy())

    def refuse(*args, **kwargs):
        from conformance.core import errors

        raise errors.ApiError(403, "Forbidden", "no")

    harness.session.k8s.list = refuse
    snap = invariants.snapshot(harness.session.k8s, ["ns"], MODULE + "::test_x")
    invariants.judge(harness, MODULE, {"snapshots": [snap], "start": 0.0, "tests": 1}, [])
    config = FakeConfig(tmp_path / "allure-results")
    invariants.report_all(config, tmp_path)
    assert next(r for r in config.reports if r.when == "call").failed
    (record,) = results.load(tmp_path / "allure-results")
    assert record.status == "broken" and "could not" in record.message


CHILD_CONFTEST = """
import pathlib, types
from conformance.plugin import HARNESS

def pytest_configure(config):
    report_dir = pathlib.Path(__file__).parent / "report"
    config.stash[HARNESS] = types.SimpleNamespace(session=object(), report_dir=report_dir)
"""


def test_a_failing_module_reaches_exit_status_junit_and_allure_under_xdist(tmp_path):
    """Through real pytest + xdist (controller emits the result): exit 1, a JUnit failure and an Allure result
    named after the module, with the violation in the message."""
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    bad = _edit(healthy(), "pick", "status.allocation.devices.results.0.device", "gpu-0")
    _judge(tmp_path / "report", bad)
    (tmp_path / "conftest.py").write_text(CHILD_CONFTEST)
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    args = ["-q", "-p", "no:cacheprovider", "-n", "2", "--rootdir", str(tmp_path), "--junitxml", "j.xml"]
    args += ["--alluredir", str(tmp_path / "allure")]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout and "allocation.unique-device" in proc.stdout, proc.stdout
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert cases["invariants"].find("failure") is not None, ET.tostring(ET.parse(tmp_path / "j.xml").getroot())
    failed = [r for r in results.load(tmp_path / "allure") if r.status == "failed"]
    assert [r.name for r in failed] == [f"invariants[{MODULE}]"], failed
