"""Unit tests: a PASS names what was not fully tested (breaker s15 C6, C7, C9) and an interrupted run records no
cut-short test as passed (C10). Synthetic run directories (the sample run.json, hand-written Allure results) go
through the real :func:`conformance.reporting.summary.build`; the manifest's missing-tests rule is stubbed to a
complete run, as the breaker's reproductions do, since a synthetic run holds only a few of a profile's tests."""

from __future__ import annotations

import json
import pathlib

import pytest

from conformance.reporting import interrupt, manifest, markdown, qualifiers, scope, summary
from tests.reporting.conftest import sample_run_json

HEALTH_SKIP = "Skipped: health switch not available: profile mine gives no health_switch.node_annotation"
SOCKET_SKIP = (
    "Skipped: node access 'privileged-pod' cannot reach the DRA plugin socket of gpu.example.com: the relay image "
    "is not on node worker-1"
)


@pytest.fixture(autouse=True)
def _complete_run(monkeypatch):
    """Every synthetic run is a complete run of its profile (no test of the manifest missing)."""
    monkeypatch.setattr(manifest, "missing", lambda profile, ids: [])


def _result(nodeid: str, status: str, message: str = "", features=(), labelled: bool = True) -> dict:
    name = nodeid.rsplit("::", 1)[-1]
    labels = [{"name": "nodeid", "value": nodeid}] if labelled else []
    labels += [{"name": "feature", "value": f} for f in features]
    return {
        "name": name,
        "fullName": nodeid.replace("/", ".").replace(".py::", "#"),
        "historyId": name,
        "status": status,
        "start": 0,
        "stop": 1,
        "statusDetails": {"message": message},
        "labels": labels,
    }


def _run(tmp_path: pathlib.Path, caps: dict, results: list[dict], **run) -> pathlib.Path:
    root = tmp_path / "run"
    (root / "allure-results").mkdir(parents=True)
    doc = sample_run_json(
        capabilities=caps, declared_capabilities=sorted(n for n, c in caps.items() if c.get("declared"))
    )
    doc.update(run)
    (root / "run.json").write_text(json.dumps(doc))
    for i, res in enumerate(results):
        (root / "allure-results" / f"{i}-result.json").write_text(json.dumps(res))
    return root


def test_a_declared_capability_partly_tested_for_a_profile_omission_is_named_on_the_verdict_line(tmp_path):
    """C6: health: true without a health_switch: HLTH-02 skips; PASS names driver.health and the reason."""
    caps = {
        "driver.health": {"available": True, "declared": True, "evidence": "driver profile declares it"},
        "gate.ResourceHealthStatus": {"available": True, "evidence": "on"},
    }
    feats = ("driver.health", "gate.ResourceHealthStatus")
    root = _run(
        tmp_path,
        caps,
        [
            _result("suites/node/test_device_health.py::test_reports_healthy", "passed", features=feats),
            _result("suites/node/test_device_health.py::test_turning_unhealthy", "skipped", HEALTH_SKIP, feats),
        ],
    )
    data = summary.build(root)
    assert data["verdict"] == "PASS"
    assert data["partlyTested"] == [
        "driver.health — test_turning_unhealthy: health switch not available: profile mine gives no "
        "health_switch.node_annotation"
    ]
    assert "partly tested: driver.health — test_turning_unhealthy: health switch not available" in data["verdictLine"]
    assert any(line.startswith("- **Partly tested**: driver.health") for line in markdown.render(data).splitlines())
    rows = dict(scope.box(data))
    assert "Coverage gap (no fitting device)" not in rows
    assert rows["Partly tested (coverage gap)"][0] == (
        "driver.health (1 test(s) not run: health switch not available: profile mine gives no "
        "health_switch.node_annotation)"
    )


def test_an_undeclared_partial_capability_is_not_a_verdict_line_item():
    """Only what the profile declares is named; a FEATURES capability already fails the verdict instead."""
    cap = {"name": "baseline", "status": "partial", "declared": False, "coverage": {"gaps": ["a::t: x"]}}
    feature = {"name": "driver.partitions", "status": "partial", "declared": True, "coverage": {"gaps": ["a::t: x"]}}
    assert qualifiers.partly_tested([cap, feature]) == []


def test_plugin_contract_tests_the_cluster_cannot_reach_are_not_testable_here_on_the_verdict_line(tmp_path):
    """C7: no relay image: the three plugin-contract tests skip; the verdict line and the box say so, with the fix."""
    caps = {
        "driver.cdi": {"available": True, "declared": True, "evidence": "held unless false"},
        "node_access": {"available": True, "evidence": "--node-access privileged-pod"},
    }
    feats = ("driver.cdi", "node_access")
    results = [_result("suites/node/test_prepare.py::test_cdi_spec", "passed", features=feats)]
    results += [_result(f"suites/node/test_plugin_contract.py::test_{n}", "skipped", SOCKET_SKIP, feats) for n in "abc"]
    data = summary.build(_run(tmp_path, caps, results))
    assert data["verdict"] == "PASS"
    (line,) = data["notTestable"]
    assert line.startswith("DRA plugin contract (NodePrepare/NodeUnprepare over the driver's gRPC socket) (3 test(s))")
    assert "relay image" in line and "images import" in line and "--node-access privileged-pod" in line
    assert "not testable on this cluster: DRA plugin contract" in data["verdictLine"]
    assert line in dict(scope.box(data))["Not testable on this cluster"]


def _opaque_run(tmp_path: pathlib.Path, evidence: str, waived: bool) -> dict:
    caps = {"driver.opaque_config": {"available": False, "declared": False, "evidence": evidence}}
    results = [
        _result(
            "suites/node/test_driver_config.py::test_claim_config_reaches_the_container",
            "skipped",
            f"Skipped: driver.opaque_config not available: {evidence}",
            ("driver.opaque_config",),
        ),
        _result("suites/node/test_x.py::test_pod_with_claim_runs", "passed"),
    ]
    return summary.build(_run(tmp_path, caps, results))


def test_leaving_opaque_config_out_is_named_at_least_as_visibly_as_its_waiver(tmp_path):
    """C9: no key and no sample: the verdict line says opaque config was not tested and what would test it."""
    left_out = _opaque_run(
        tmp_path / "a", "profile mine.yaml carries no opaque_config.parameters sample (not claimed)", False
    )
    waiver = _opaque_run(
        tmp_path / "b", "profile mine.yaml declares opaque_config: false (the opaque config tests skip)", True
    )
    assert "waived: opaque_config" in waiver["verdictLine"] and not waiver["untested"]
    assert left_out["untested"] == [f"opaque config — {qualifiers.NEEDS_PROFILE['opaque config'][1]}"]
    assert (
        "not tested (profile gives nothing to test it with): opaque config — give opaque_config.parameters"
        in (left_out["verdictLine"])
    )
    assert left_out["verdictLine"] != "PASS" and left_out["verdict"] == "PASS"


def test_the_admin_access_signal_is_moot_when_admin_access_is_waived():
    """C9: the admin access signal and CDI identity are listed unless the feature they refine is waived."""
    names = ["admin access signal", "CDI device identity", "health"]
    assert [u.split(" — ")[0] for u in qualifiers.untested_by_omission(names, [])] == names[:2]
    assert qualifiers.untested_by_omission(names, ["admin_access", "cdi"]) == []


def test_an_interrupted_run_records_the_cut_short_test_as_unknown_and_the_rest_as_not_run(tmp_path):
    """C10: allure-pytest wrote 'passed' without the harness's labels for the test Ctrl-C cut short, and
    reasonless skips for the tests never started; both summary.json and the Allure files say what happened."""
    results = [
        _result("suites/a.py::test_done", "passed", features=("baseline",)),
        _result("suites/a.py::test_cut_short", "passed", labelled=False),
        _result("suites/a.py::test_never_started", "skipped", labelled=False),
    ]
    root = _run(tmp_path, {}, results, interrupted=True)
    data = summary.build(root)
    by_name = {t["name"]: t for t in data["tests"]}
    assert by_name["test_done"]["status"] == "passed"
    assert by_name["test_cut_short"]["status"] == "unknown"
    assert by_name["test_cut_short"]["reason"] == interrupt.CUT_SHORT
    assert by_name["test_never_started"]["reason"] == interrupt.NOT_RUN
    assert data["counts"]["passed"] == 1 and data["verdictLine"].startswith("INTERRUPTED")
    assert interrupt.settle_files(root / "allure-results", True) == 2
    files = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in root.glob("allure-results/*")}
    assert files["test_cut_short"]["status"] == "unknown"
    assert files["test_never_started"]["statusDetails"]["message"] == interrupt.NOT_RUN
    assert interrupt.settle_files(root / "allure-results", True) == 0  # idempotent


def test_a_run_that_was_not_interrupted_keeps_its_records(tmp_path):
    """Without run.json ``interrupted`` nothing is rewritten (an unlabelled pass of a plain pytest session)."""
    root = _run(tmp_path, {}, [_result("suites/a.py::test_x", "passed", labelled=False)])
    assert summary.build(root)["tests"][0]["status"] == "passed"
    assert interrupt.settle_files(root / "allure-results", False) == 0
