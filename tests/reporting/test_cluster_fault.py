"""Failures the cluster explains (issue 27 §2): attributed as infrastructure with evidence, verdict ERROR (cluster).

Real summaries built from hand-written Allure results and a cluster-health.jsonl as the run's watcher writes it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import xml.etree.ElementTree as ET

import pytest

from conformance.k8s import health
from conformance.reporting import classify, cluster_fault, summary
from conformance.runner import cli as run_cli
from tests.reporting.conftest import sample_run_json

T0 = 1_800_000_000.0  # epoch seconds of the fake run


def _result(d: pathlib.Path, name: str, status: str, start: float, stop: float, message: str = "", cls: str = ""):
    labels = [{"name": "nodeid", "value": f"suites/node/test_x.py::{name}"}]
    labels += [{"name": "failure_class", "value": cls}] if cls else []
    doc = {
        "name": name,
        "fullName": f"suites.node.test_x#{name}",
        "historyId": name,
        "status": status,
        "statusDetails": {"message": message, "trace": ""},
        "labels": labels,
        "start": int(start * 1000),
        "stop": int(stop * 1000),
    }
    (d / f"{name}-result.json").write_text(json.dumps(doc))


def _run(tmp_path: pathlib.Path, samples: list[dict], results: list[tuple]) -> pathlib.Path:
    run = tmp_path / "run"
    (run / "allure-results").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(sample_run_json(declared_capabilities=[])))
    (run / health.FILE).write_text("".join(json.dumps(s) + "\n" for s in samples))
    for args in results:
        _result(run / "allure-results", *args)
    return run


DOWN = [
    {"t": T0, "ok": True, "what": "ready", "detail": "/readyz ok"},
    {"t": T0 + 10, "ok": False, "what": "unreachable", "detail": "MaxRetryError: Connection refused"},
    {"t": T0 + 11, "ok": False, "what": "unreachable", "detail": "MaxRetryError: Connection refused"},
    {"t": T0 + 25, "ok": True, "what": "ready", "detail": "/readyz ok"},
]


def test_outages_are_windows_from_the_first_failing_probe_to_the_next_ready_one():
    got = health.outages(
        [
            *DOWN,
            {"t": T0 + 40, "ok": False, "what": "not-ready", "detail": "[-]etcd failed"},
            {"t": T0 + 45, "ok": False, "what": "not-ready", "detail": "x"},
        ]
    )
    assert [(o.start - T0, o.end - T0, o.what) for o in got] == [(10, 25, "unreachable"), (40, 45, "not-ready")]
    assert got[0].text().startswith("API server unreachable ") and "(15 s)" in got[0].text(), got[0].text()


def test_an_outage_names_each_kind_of_failure_seen_in_it():
    etcd = {"t": T0 + 12, "ok": False, "what": "not-ready", "detail": "HTTP 500 from /readyz: [-]etcd failed"}
    got = health.outages([DOWN[0], {**DOWN[1], "detail": "no answer within 3 s"}, etcd, DOWN[3]])
    assert got[0].detail == "no answer within 3 s; then HTTP 500 from /readyz: [-]etcd failed", got


def test_a_wait_failing_during_an_outage_is_the_clusters_not_the_drivers(tmp_path):
    run = _run(
        tmp_path,
        DOWN,
        [
            (
                "test_during",
                "broken",
                T0 + 5,
                T0 + 20,
                "conformance.core.errors.WaitFailed: pod p Failed",
                "driver-defect",
            ),
            ("test_before", "passed", T0 + 1, T0 + 4),
        ],
    )
    data = summary.build(run)
    during = next(t for t in data["tests"] if t["name"] == "test_during")
    assert during["status"] == "broken" and during["failureClass"] == classify.INFRASTRUCTURE, during
    assert during["reason"].startswith("cluster fault: API server unreachable"), during["reason"]
    assert data["verdictLine"].startswith("ERROR (cluster) — API server unreachable"), data["verdictLine"]
    assert data["clusterFault"]["unexplained"] == [] and len(data["clusterFault"]["tests"]) == 1


def test_a_failure_outside_every_outage_stays_a_driver_defect_and_the_verdict_fail(tmp_path):
    run = _run(
        tmp_path,
        DOWN,
        [
            ("test_during", "broken", T0 + 5, T0 + 20, "urllib3.exceptions.MaxRetryError: x", "infrastructure"),
            ("test_after", "failed", T0 + 30, T0 + 35, "AssertionError: device not visible", "driver-defect"),
        ],
    )
    data = summary.build(run)
    after = next(t for t in data["tests"] if t["name"] == "test_after")
    assert after["status"] == "failed" and after["failureClass"] == classify.DRIVER_DEFECT, after
    assert data["verdict"] == "FAIL" and data["verdictLine"] == "FAIL", data["verdictLine"]
    assert data["clusterFault"]["unexplained"] == ["suites/node/test_x.py::test_after"], data["clusterFault"]


@pytest.mark.parametrize(
    "message",
    [
        "urllib3.exceptions.MaxRetryError: ... [Errno 111] Connection refused",
        "conformance.core.errors.ApiError: GET /api/v1/pods: 401 Unauthorized: Unauthorized",
        "OSError: [Errno 28] No space left on device: '/var/run/cdi/x.json'",
    ],
)
def test_the_message_alone_never_names_a_cluster_fault(tmp_path, message):
    # a driver can write any of these (breaker finding 2): without an observed outage the failure stays FAIL
    run = _run(tmp_path, [], [("test_a", "broken", T0, T0 + 1, message, "suite-error")])
    data = summary.build(run)
    assert data["clusterFault"] is None and data["verdictLine"] == "FAIL", data["verdictLine"]


def test_enospc_naming_the_report_directory_is_the_clusters(tmp_path):
    run = tmp_path / "run"
    message = f"OSError: [Errno 28] No space left on device: '{run}/allure-results/x-attachment.txt'"
    _run(tmp_path, [], [("test_a", "broken", T0, T0 + 1, message, "suite-error")])
    data = summary.build(run)
    assert data["verdictLine"].startswith("ERROR (cluster) — no space left on device on the report directory")


def test_a_403_alone_is_not_the_clusters_but_inside_a_credentials_outage_it_is(tmp_path):
    forbidden = "conformance.core.errors.Forbidden: POST x: 403 Forbidden: cannot create"
    run = _run(tmp_path, [], [("test_a", "broken", T0, T0 + 1, forbidden, "suite-error")])
    assert summary.build(run)["clusterFault"] is None
    revoked = [
        {"t": T0 - 5, "ok": True, "what": "ready", "detail": "/readyz ok"},
        {"t": T0 - 1, "ok": False, "what": "credentials-refused", "detail": "HTTP 401 on the kubeconfig's"},
        {"t": T0 + 9, "ok": False, "what": "credentials-refused", "detail": "the run's last probe"},
    ]
    run2 = _run(tmp_path / "2", revoked, [("test_a", "broken", T0, T0 + 1, forbidden, "suite-error")])
    assert summary.build(run2)["verdictLine"].startswith("ERROR (cluster) — the kubeconfig's credentials refused")


def test_an_outage_with_every_test_passing_keeps_the_pass_and_records_the_outage(tmp_path):
    run = _run(tmp_path, DOWN, [("test_ok", "passed", T0 + 5, T0 + 20)])
    data = summary.build(run)
    assert data["verdict"] == "PASS" and not data["verdictLine"].startswith("ERROR"), data["verdictLine"]
    assert data["clusterFault"]["outages"][0].startswith("API server unreachable"), data["clusterFault"]


def test_junit_shows_an_error_not_a_failure_for_an_attributed_test(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(
        '<testsuites><testsuite name="s" tests="1" failures="1" errors="0">'
        '<testcase classname="suites.node.test_x" name="test_a"><failure message="boom">t</failure></testcase>'
        "</testsuite></testsuites>"
    )
    fault = {"tests": [{"id": "suites/node/test_x.py::test_a", "evidence": "API server unreachable"}]}
    assert cluster_fault.mark_junit(path, fault) == 1
    suite = ET.parse(path).getroot().find("testsuite")
    err = suite.find("testcase/error")
    assert err is not None and err.get("message").startswith("cluster fault: API server unreachable; boom")
    assert suite.get("failures") == "0" and suite.get("errors") == "1"


def test_allure_results_of_an_attributed_test_say_infrastructure_too(tmp_path):
    """s16 breaker F4: Allure's categories read the result files; they must agree with ERROR (cluster)."""
    import json

    labels = [{"name": "nodeid", "value": "suites/node/test_x.py::test_a"}, {"name": "failure_class", "value": "x"}]
    result = {"status": "failed", "labels": labels, "statusDetails": {"message": "WaitTimeout: boom"}}
    other = {"status": "failed", "labels": [{"name": "nodeid", "value": "suites/node/test_x.py::test_b"}]}
    (tmp_path / "a-result.json").write_text(json.dumps(result))
    (tmp_path / "b-result.json").write_text(json.dumps(other))
    fault = {"tests": [{"id": "suites/node/test_x.py::test_a", "evidence": "API server unreachable"}]}
    assert cluster_fault.mark_allure(tmp_path, fault) == 1
    assert cluster_fault.mark_allure(tmp_path, fault) == 1  # idempotent: the message is prefixed once
    got = json.loads((tmp_path / "a-result.json").read_text())
    assert got["status"] == "broken" and {"name": "failure_class", "value": "infrastructure"} in got["labels"]
    assert got["statusDetails"]["message"] == "cluster fault: API server unreachable; WaitTimeout: boom"
    assert json.loads((tmp_path / "b-result.json").read_text()) == other


def test_run_judge_exits_3_with_the_cluster_verdict(tmp_path):
    run = _run(tmp_path, DOWN, [("test_during", "broken", T0 + 5, T0 + 20, "WaitFailed: x", "driver-defect")])
    args = argparse.Namespace(no_report=True)
    verdict, code, _ = run_cli._judge(args, 1, 0, run)
    assert code == 3 and verdict.startswith("ERROR (cluster) — API server unreachable"), (verdict, code)


def test_watcher_logs_changes_of_state_only(tmp_path):
    states = iter(
        [(True, "ready", "ok"), (True, "ready", "ok"), (False, "unreachable", "refused"), (True, "ready", "ok")]
    )
    w = health.Watcher(None, tmp_path, probe_fn=lambda: next(states))
    for _ in range(4):
        w.sample()
    got = [(s["ok"], s["what"]) for s in health.read(tmp_path)]
    assert got == [(True, "ready"), (False, "unreachable"), (True, "ready")], got


def test_report_dir_full_names_enospc(tmp_path, monkeypatch):
    assert cluster_fault.report_dir_full(tmp_path) == ""

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_bytes", full)
    assert "no space left on device on the report directory" in cluster_fault.report_dir_full(tmp_path)


def test_run_judge_says_error_cluster_only_when_the_run_hit_enospc(tmp_path, monkeypatch):
    # breaker finding 4: a nearly full disk (a driver leaking files onto a shared disk) keeps FAIL, with a note
    monkeypatch.setattr(cluster_fault, "report_dir_full", lambda d: f"the report directory {d} has 0 bytes free")
    verdict, code, _ = run_cli._judge(argparse.Namespace(no_report=True), 1, 1, tmp_path)
    assert code == 1 and "report disk nearly full" in verdict and "ERROR" not in verdict, verdict
    hit = "[Errno 28] No space left on device: 'junit.xml'"
    verdict, code, _ = run_cli._judge(argparse.Namespace(no_report=True), 3, 1, tmp_path, enospc=hit)
    assert code == 3 and verdict.startswith("ERROR (cluster) — no space left on device writing the report"), verdict
    monkeypatch.setattr(cluster_fault, "report_dir_full", lambda d: "")
    assert run_cli._judge(argparse.Namespace(no_report=True), 1, 1, tmp_path)[1] == 1
