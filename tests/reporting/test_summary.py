"""summary.json: schema validation and the fail-closed verdict rules (reporting.md §4.3, §4.6)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from conformance.reporting import build, summary
from tests.reporting.conftest import run_sample, sample_run_json


def test_failing_run_summary_follows_schema_and_fails(failing_run):
    """One failing test -> FAIL naming the failing capability; environment copied from run.json."""
    data = json.loads((failing_run / "summary.json").read_text())
    summary.validate(data)
    assert data["verdict"] == "FAIL"
    caps = {c["name"]: c for c in data["capabilities"]}
    assert caps["driver.shared_claims"]["status"] == "fail" and caps["driver.shared_claims"]["declared"]
    assert "pods saw different devices" in caps["driver.shared_claims"]["reasons"][0]
    assert caps["gate.DRAPrioritizedList"]["status"] == "skip"
    assert "not available" in caps["gate.DRAPrioritizedList"]["reasons"][0]
    assert caps["baseline"]["status"] == "pass"
    assert any("driver.shared_claims" in r for r in data["verdictReasons"]), data["verdictReasons"]
    assert data["counts"] == {
        "passed": 1,
        "failed": 1,
        "broken": 1,
        "skipped": 1,
        "unknown": 0,
        "total": 4,
        "executed": 3,
        "retried": 0,
    }
    env = data["environment"]
    assert (env["kubernetesVersion"], env["containerRuntime"]) == ("v1.35.4", "containerd://2.2.9")
    assert env["nodeOS"].startswith("Debian") and len(env["devices"]) == 2
    assert data["driver"] == {
        "name": "gpu.reference.dra.example",
        "version": "0.1.0",
        "deploy": "process",
        "profile": "reference",
    }
    failed = next(t for t in data["tests"] if t["status"] == "failed")
    assert failed["failureClass"] == "driver-defect" and len(failed["evidence"]) == 3
    assert "# DRA driver qualification: FAIL" in (failing_run / "summary.md").read_text()


def test_schema_rejects_a_fail_without_reasons_and_a_skip_without_reason(failing_run):
    data = json.loads((failing_run / "summary.json").read_text())
    bad = copy.deepcopy(data)
    bad["verdictReasons"] = []
    with pytest.raises(jsonschema.ValidationError):
        summary.validate(bad)
    bad = copy.deepcopy(data)
    next(t for t in bad["tests"] if t["status"] == "skipped")["reason"] = None
    with pytest.raises(jsonschema.ValidationError):
        summary.validate(bad)
    bad = copy.deepcopy(data)
    bad["schemaVersion"] = "0"
    with pytest.raises(jsonschema.ValidationError):
        summary.validate(bad)


def test_passing_run_passes(tmp_path):
    proc = run_sample(
        tmp_path / "run",
        "-k",
        "claim_allocated or sharing or first_available",
        fail=False,
        run_json=sample_run_json(declared_capabilities=[]),
    )
    assert proc.returncode == 0, proc.stdout
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert verdict.passed and verdict.text == "PASS" and verdict.reasons == (), verdict


def test_declared_capability_never_executed_fails(tmp_path):
    """A capability the driver profile declares must be exercised: all-skipped/deselected -> FAIL."""
    run_sample(tmp_path / "run", "-k", "claim_allocated", fail=False)
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert not verdict.passed
    assert any("driver.shared_claims is not-tested" in r for r in verdict.reasons), verdict.reasons


def test_declared_capability_unavailable_fails(tmp_path):
    run = sample_run_json(declared_capabilities=["gate.DRAPrioritizedList"])
    run_sample(tmp_path / "run", "-k", "claim_allocated or first_available", run_json=run)
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert any("gate.DRAPrioritizedList is fail" in r and "not available" in r for r in verdict.reasons)


def test_zero_executed_tests_fails(tmp_path):
    run_sample(tmp_path / "run", "-k", "first_available", run_json=sample_run_json(declared_capabilities=[]))
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert verdict.reasons == ("zero tests executed (everything skipped or deselected)",)


def test_declared_capability_whose_tests_skipped_for_another_capability_does_not_fail():
    """A declared capability (multiple_devices) whose only selected test skipped because ANOTHER capability it
    needs is missing (device_status, not declared) is not held against the driver; a skip that names the
    capability itself still fails it."""
    test = {
        "id": "t1",
        "status": "skipped",
        "reason": "driver.device_status not available: profile p does not declare device_status",
        "capabilities": ["driver.device_status", "driver.multiple_devices"],
    }
    cap = {"name": "driver.multiple_devices", "status": "skip", "declared": True, "reasons": ["t1: ..."]}
    counts = {"executed": 1, "unknown": 0}
    assert summary.verdict_reasons(counts, [{**cap, "tests": ["t1"]}], [test]) == []
    own = {**test, "reason": "driver.multiple_devices not available: one device per node"}
    reasons = summary.verdict_reasons(counts, [{**cap, "tests": ["t1"]}], [own])
    assert reasons and reasons[0].startswith("declared capability driver.multiple_devices is skip")
    # a Kubernetes release gap a fixture found (not among the test's requires) is never the driver's either
    gap = {**test, "reason": "allocator.admin_access_counters not available: kubernetes/kubernetes#140729"}
    assert summary.verdict_reasons(counts, [{**cap, "tests": ["t1"]}], [{**gap, "capabilities": []}]) == []


def test_skip_without_reason_fails():
    tests = [{"id": "t1", "status": "skipped", "reason": ""}, {"id": "t2", "status": "passed", "reason": None}]
    counts = {"executed": 1, "unknown": 0}
    assert summary.verdict_reasons(counts, [], tests) == ["skipped without a reason: t1"]


def test_broken_capability_from_the_harness_fails(tmp_path):
    """run.json capabilities marked ``broken`` (declared by the profile, not delivered) fail the run even
    when every test requiring them was deselected."""
    run = sample_run_json(declared_capabilities=[])
    run["capabilities"]["driver.admin_access"] = {
        "available": False,
        "broken": True,
        "evidence": "profile declares admin_access; slices do not",
    }
    run_sample(tmp_path / "run", "-k", "claim_allocated", run_json=run)
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert any(r.startswith("declared capability driver.admin_access is fail") for r in verdict.reasons), (
        verdict.reasons
    )


def _t(status: str, *areas: str) -> dict:
    return {"status": status, "areas": list(areas)}


def test_mission_areas_report_each_of_the_five_in_order_with_status():
    tests = [
        _t("passed", "api_v1"),
        _t("failed", "allocation"),
        _t("passed", "allocation"),
        _t("skipped", "prioritized_list"),
        _t("passed", "node"),
    ]
    areas = {a["name"]: a for a in summary.mission_areas(tests)}
    assert list(areas) == ["api_v1", "allocation", "prioritized_list", "admin_access", "podresources"]
    assert {n: a["status"] for n, a in areas.items()} == {
        "api_v1": "pass",
        "allocation": "fail",
        "prioritized_list": "skip",
        "admin_access": "not-tested",
        "podresources": "not-tested",
    }
    assert areas["allocation"]["counts"] == {"failed": 1, "passed": 1} and areas["allocation"]["tests"] == 2


def test_summary_markdown_has_the_mission_area_table(failing_run):
    data = summary.build(failing_run)
    assert [a["name"] for a in data["missionAreas"]][0] == "api_v1"
    from conformance.reporting import markdown

    text = markdown.render(data)
    assert "## Mission areas" in text and "| podresources |" in text


def test_profile_opt_outs_of_default_checks_are_shown_as_waivers(failing_run):
    """A profile declaring ``cdi: false`` or ``container_isolation: false`` skips checks every driver is held to
    by default: summary.md says so in its headline and lists each waiver with its evidence and skipped tests."""
    from conformance.reporting import markdown

    data = summary.build(failing_run)
    plain = markdown.render(data)
    assert "waiver" not in plain
    data["capabilities"].append(
        {
            "name": "driver.cdi",
            "status": "skip",
            "declared": False,
            "clusterLacks": False,
            "available": False,
            "evidence": "profile dranet (dranet.yaml) declares cdi: false (NodePrepareResources names no device)",
            "counts": {"skipped": 2},
            "reasons": ["t1: driver.cdi not available"],
            "tests": ["t1", "t2"],
        }
    )
    text = markdown.render(data)
    assert text.splitlines()[0].endswith("(with 1 profile waiver(s), below)")
    assert "## Waived by the driver profile" in text and "declares cdi: false" in text and "skipped: 2" in text


def test_declared_capability_the_cluster_does_not_serve_is_shown_not_failed(tmp_path):
    """A capability the profile declares whose feature gate the cluster has off (``cluster_lacks``) skips with
    that evidence and does not fail the driver (issue 13: new features skip on 1.34 default gates); the
    same capability marked broken still fails."""
    run = sample_run_json(declared_capabilities=[])
    run["capabilities"]["driver.taints"] = {
        "available": False,
        "broken": False,
        "cluster_lacks": True,
        "declared": True,
        "evidence": "profile reference declares taints but the cluster lacks it: DRADeviceTaints = 0",
    }
    run_sample(tmp_path / "run", "-k", "claim_allocated", run_json=run, fail=False)
    verdict = build.generate(tmp_path / "run", html_report=False)
    assert not any("driver.taints" in r for r in verdict.reasons), verdict.reasons
    data = json.loads((tmp_path / "run" / "summary.json").read_text())
    (cap,) = [c for c in data["capabilities"] if c["name"] == "driver.taints"]
    assert cap["status"] == "skip" and cap["clusterLacks"] is True
    assert "the cluster does not serve it" in cap["reasons"][0]


@pytest.mark.parametrize(
    "entry, reason",
    [
        (  # issue: /metrics unreadable (403) -> the gate's state is unknown, which never excuses a declared capability
            {
                "available": False,
                "cluster_lacks": False,
                "evidence": "profile reference declares admin_access but the state of feature gate DRAAdminAccess "
                "could not be read: kube-apiserver /metrics could not be read (403 Forbidden); fix: grant get on "
                "nonResourceURL /metrics",
            },
            "could not be read",
        ),
        (  # published in the slices but not declared by the profile: held to it as declared
            {
                "available": True,
                "cluster_lacks": False,
                "evidence": "slices publish sharedCounters/consumesCounters (a/d0): published in the driver's "
                "ResourceSlices but not declared by profile reference",
            },
            "is not-tested",
        ),
    ],
    ids=["gate-unknown", "published-undeclared"],
)
def test_declared_capability_without_known_off_gate_fails_the_verdict(tmp_path, entry, reason):
    """A declared capability that is unavailable for an UNKNOWN gate state, or one the slices publish whose tests
    never ran, fails the verdict with its evidence (no undeserved PASS)."""
    run = sample_run_json(declared_capabilities=[])
    run["capabilities"]["driver.admin_access"] = {"broken": False, "declared": True, **entry}
    run_sample(tmp_path / "run", "-k", "claim_allocated", run_json=run, fail=False)
    verdict = build.generate(tmp_path / "run", html_report=False)
    data = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert data["verdict"] == "FAIL"
    assert any("driver.admin_access" in r and reason in r for r in verdict.reasons), verdict.reasons
    (cap,) = [c for c in data["capabilities"] if c["name"] == "driver.admin_access"]
    assert cap["declared"] and cap["clusterLacks"] is False


def test_run_exit_code_follows_the_summary_rules(tmp_path):
    """A run whose tests all passed but whose summary fails a rule (here a declared capability the harness
    found broken) must not print or exit PASS: ``summary_reasons`` is what ``dra-conformance run`` turns into
    exit 1 and ``VERDICT: FAIL (...)``; the same run without the broken capability gives no reason."""
    from conformance.runner.cli import summary_reasons

    run = sample_run_json(declared_capabilities=[])
    run["capabilities"]["driver.admin_access"] = {"available": False, "broken": True, "evidence": "no slices"}
    run_sample(tmp_path / "bad", "-k", "claim_allocated", run_json=run, fail=False)
    reasons = summary_reasons(tmp_path / "bad")
    assert any(r.startswith("declared capability driver.admin_access is fail") for r in reasons), reasons
    assert not (tmp_path / "bad" / "summary.json").exists()  # evaluating writes nothing
    run_sample(
        tmp_path / "good", "-k", "claim_allocated", run_json=sample_run_json(declared_capabilities=[]), fail=False
    )
    assert summary_reasons(tmp_path / "good") == ()


def test_names_devices_opt_out_is_a_waiver_in_summary_json_and_md(tmp_path):
    """A profile with ``visibility.names_devices: false`` (k8s-test-driver) runs every device check but proves
    visibility only: summary.json lists capability ``driver.names_devices`` with the profile as evidence, and
    summary.md counts it in the headline and lists it under the waivers, without failing the run."""
    from conformance.core.capabilities import evaluate
    from conformance.drivers import profiles

    cap = evaluate({}, profiles.load("k8s-test-driver")).as_dict()["driver.names_devices"]
    run = sample_run_json(declared_capabilities=[])
    run["capabilities"]["driver.names_devices"] = cap
    run_sample(tmp_path / "run", "-k", "claim_allocated", run_json=run, fail=False)
    verdict = build.generate(tmp_path / "run", html_report=False)
    data = json.loads((tmp_path / "run" / "summary.json").read_text())
    (entry,) = [c for c in data["capabilities"] if c["name"] == "driver.names_devices"]
    assert entry["available"] is False and not entry["declared"]
    assert "declares visibility.names_devices: false" in entry["evidence"] and "not which one" in entry["evidence"]
    assert not any("names_devices" in r for r in verdict.reasons), verdict.reasons
    text = (tmp_path / "run" / "summary.md").read_text()
    assert "profile waiver(s), below)" in text.splitlines()[0]
    waivers = text.split("## Waived by the driver profile", 1)[1].split("##", 1)[0]
    assert "`driver.names_devices`: profile k8s-test-driver" in waivers and "tests skipped" not in waivers


def test_an_interrupted_run_says_interrupted_not_fail_or_pass(tmp_path):
    """Ctrl-C or SIGTERM (run.json ``interrupted``, written at session finish): summary.json keeps a failing
    verdict with the interruption as its first reason, and its verdictLine (summary.md's headline) says
    INTERRUPTED, as the terminal's VERDICT line does (breaker s14 B10: "FAIL: zero tests executed")."""
    from conformance.reporting import markdown

    run_dir = tmp_path / "run"
    run_sample(run_dir, "-k", "claim_allocated", run_json={**sample_run_json(), "interrupted": True}, fail=False)
    data = summary.build(run_dir)
    assert data["verdict"] == "FAIL" and data["verdictReasons"][0].startswith("the run was interrupted"), data
    assert data["verdictLine"].startswith("INTERRUPTED — the run was interrupted (Ctrl-C or SIGTERM) after 1 ")
    assert markdown.render(data).splitlines()[0].endswith(data["verdictLine"])
    plain = summary.build(_rerun(tmp_path))
    assert not plain["verdictLine"].startswith("INTERRUPTED")


def _rerun(tmp_path):
    run_dir = tmp_path / "plain"
    run_sample(run_dir, "-k", "claim_allocated", fail=False)
    return run_dir
