"""Unit tests: no PASS by omission (issue 24 §1). The reference profile with ``admin_access: false`` passes with
the waiver named on the verdict line; with ``prioritized_list`` and ``opaque_config`` removed those tests still
run; with DRAAdminAccess off the verdict is ``PASS (not qualified: admin_access)``. Capabilities come from
:func:`conformance.core.capabilities.evaluate` over the shipped reference profile, the summary sections from
:mod:`conformance.reporting.summary`, the verdict line from :mod:`conformance.reporting.scope`."""

from __future__ import annotations

import pathlib

import yaml

from conformance.core import capabilities, profile, selection
from conformance.reporting import markdown, narrowed, scope, summary

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "drivers" / "reference.yaml"
GATES = ("DRAAdminAccess", "DRAPrioritizedList", "DRADeviceTaints", "DRAExtendedResource")
# one test per mission area: (id, area, required capabilities)
TESTS = (
    ("api::test_v1", "api_v1", ()),
    ("alloc::test_claim", "allocation", ()),
    ("alloc::test_shared", "allocation", ("driver.shared_claims",)),
    ("alloc::test_opaque", "allocation", ("driver.opaque_config",)),
    ("pl::test_first_available", "prioritized_list", ("gate.DRAPrioritizedList", "driver.prioritized_list")),
    ("admin::test_admin", "admin_access", ("gate.DRAAdminAccess", "driver.admin_access")),
    ("podres::test_get", "podresources", ("node_access",)),
)


def _reference(**change) -> profile.DriverProfile:
    """The shipped reference profile with capabilities changed (None: the key removed)."""
    raw = yaml.safe_load(REFERENCE.read_text())
    for key, value in change.items():
        raw["capabilities"].pop(key, None)
        if value is not None:
            raw["capabilities"][key] = value
    return profile.parse(raw, source="reference-copy.yaml")


def _facts(**gates) -> dict:
    return {
        "served_versions": {"v1": [], "v1alpha3": ["devicetaintrules"]},
        "feature_gates": {**dict.fromkeys(GATES, True), **gates},
        "devices": [{"node": n, "pool": n, "device": f"gpu-{i}"} for n in ("a", "b") for i in range(2)],
        "k8s_version": "v1.34.4",
        "node_access": (True, "local cluster"),
    }


def _summary(prof: profile.DriverProfile, facts: dict) -> dict:
    """The summary sections of a run of :data:`TESTS` (each passes when selected, else skips with its reason)."""
    caps = capabilities.evaluate(facts, prof)
    tests = []
    for nodeid, area, required in TESTS:
        decision = selection.decide(["standard"], list(required), "standard", caps)
        status = "passed" if decision.action == "run" else "skipped"
        reason = None if status == "passed" else decision.reason
        tests.append(
            {"id": nodeid, "status": status, "reason": reason, "areas": [area], "capabilities": list(required)}
        )
    exercised = {c for _, _, required in TESTS for c in required}  # run.json narrows declared to these
    run = {"capabilities": {n: {**c, "declared": c["declared"] and n in exercised} for n, c in caps.as_dict().items()}}
    caps_section = summary._capabilities(tests, run)
    areas = summary.mission_areas(tests)
    counts = {"executed": sum(t["status"] == "passed" for t in tests), "unknown": 0}
    reasons = summary.verdict_reasons(counts, caps_section, tests)
    data = {"verdict": narrowed.verdict(reasons, None), "profile": "standard", "narrowed": None, "tests": tests}
    data.update(verdictReasons=reasons, capabilities=caps_section, **scope.fields(caps_section, areas))
    return {**data, "verdictLine": scope.verdict_line(data)}


def _ran(data: dict) -> set[str]:
    return {t["id"] for t in data["tests"] if t["status"] == "passed"}


def test_the_reference_profile_qualifies_every_mission_area():
    """Given the shipped reference profile and every gate on, then the verdict is a bare PASS: all five mission
    areas qualified, nothing waived; the optional features it does not claim are listed."""
    data = _summary(_reference(), _facts())
    assert data["verdictLine"] == "PASS", data
    assert data["qualifiedAreas"] == ["api_v1", "allocation", "prioritized_list", "admin_access", "podresources"]
    assert data["notQualified"] == [] and data["waived"] == []
    assert "device status" in data["notClaimed"] and "health" not in data["notClaimed"], data["notClaimed"]


def test_admin_access_false_is_a_waiver_named_on_the_verdict_line():
    """Given a copy of the reference profile with admin_access: false, then the admin test skips, the run
    passes, and the verdict line names the waiver (and the area it leaves unqualified)."""
    data = _summary(_reference(admin_access=False), _facts())
    assert "admin::test_admin" not in _ran(data) and data["verdictReasons"] == []
    assert data["verdictLine"] == "PASS (waived: admin_access; not qualified: admin_access)", data["verdictLine"]


def test_removed_keys_do_not_dodge_the_prioritized_list_and_opaque_config_tests():
    """Given a copy of the reference profile with prioritized_list and opaque_config removed (its opaque_config
    sample kept), then those tests still run and the verdict holds the driver to them."""
    data = _summary(_reference(prioritized_list=None, opaque_config=None), _facts())
    assert {"pl::test_first_available", "alloc::test_opaque"} <= _ran(data), data["tests"]
    assert data["verdictLine"] == "PASS"
    held = {c["name"]: c["declared"] for c in data["capabilities"]}
    assert held["driver.prioritized_list"] and held["driver.opaque_config"], held


def test_shared_claims_removed_is_still_held():
    """A profile silent about shared_claims runs the shared-claim tests and is held to them."""
    data = _summary(_reference(shared_claims=None), _facts())
    assert "alloc::test_shared" in _ran(data)
    assert {c["name"]: c["declared"] for c in data["capabilities"]}["driver.shared_claims"]


def test_admin_access_gate_off_gives_pass_not_qualified():
    """Given a cluster with DRAAdminAccess off, then the admin test skips with the gate as evidence, the
    verdict is ``PASS (not qualified: admin_access)`` (exit 0) and no waiver is claimed."""
    for prof in (_reference(), _reference(admin_access=None)):
        data = _summary(prof, _facts(DRAAdminAccess=False))
        assert data["verdict"] == "PASS" and data["verdictReasons"] == [], data["verdictReasons"]
        assert data["verdictLine"] == "PASS (not qualified: admin_access)", data["verdictLine"]
        assert "admin_access" not in data["qualifiedAreas"] and data["waived"] == []


def test_no_node_access_leaves_podresources_not_qualified():
    """Without node access the PodResources area is not qualified, never a silent PASS."""
    data = _summary(_reference(), {**_facts(), "node_access": (False, "no node access: --node-access none")})
    assert data["verdictLine"] == "PASS (not qualified: podresources)", data["verdictLine"]


def test_opaque_config_without_a_sample_is_not_claimed_and_false_is_a_waiver():
    """No sample and no key: unavailable (not claimed, not held); an explicit false is a waiver."""
    raw = yaml.safe_load(REFERENCE.read_text())
    raw.pop("opaque_config")
    raw["capabilities"].pop("opaque_config")
    cap = capabilities.evaluate(_facts(), profile.parse(raw, source="x.yaml")).items["driver.opaque_config"]
    assert not cap.available and not cap.declared and "no opaque_config.parameters sample" in cap.evidence
    off = capabilities.evaluate(_facts(), _reference(opaque_config=False)).items["driver.opaque_config"]
    assert not off.available and markdown.WAIVER.search(off.evidence)
    entry = {"declared": False, "available": False}
    assert scope.not_claimed([{**entry, "name": cap.name, "evidence": cap.evidence}]) == ["opaque config"]
    assert scope.not_claimed([{**entry, "name": off.name, "evidence": off.evidence}]) == []  # waived, not unclaimed


def test_a_failure_gives_fail_and_a_narrowed_pass_keeps_its_line():
    """FAIL stays FAIL; a narrowed run keeps the narrowed line of conformance/reporting/narrowed.py."""
    assert scope.verdict_line({"verdict": "FAIL", "profile": "standard", "narrowed": None}) == "FAIL"
    cut = {"text": "-k x; 1 of 9 tests"}
    line = scope.verdict_line({"verdict": "NARROWED-PASS", "profile": "standard", "narrowed": cut})
    assert line.startswith("PASS (narrowed: -k x") and "not a qualification" in line


def test_not_claimed_skips_what_the_cluster_lacks_and_names_the_upgrade_path():
    """``not claimed`` is about the profile: a gate off is not listed; a profile without upgrade_from is."""
    caps = [
        {"name": "driver.device_status", "declared": False, "available": False, "evidence": "does not declare"},
        {"name": "driver.partitions", "declared": False, "available": False, "evidence": "the cluster lacks it"},
        {"name": "driver.health", "declared": True, "available": True, "evidence": "declares health: true"},
        {"name": "driver_upgrade", "declared": False, "available": False, "evidence": "names no (upgrade_from)"},
    ]
    assert scope.not_claimed(caps) == ["device status", "upgrade path"]


def test_summary_md_headline_shows_the_scope():
    """summary.md's headline carries the verdict line; the lines under it list not qualified, waived and not
    claimed."""
    data = _summary(_reference(admin_access=False), _facts())
    lines = markdown._scope_lines(data)
    assert any("Not qualified" in x and "admin_access" in x for x in lines), lines
    assert any("Waived" in x and "admin_access" in x for x in lines)
    assert any("Not claimed" in x for x in lines)


def test_a_narrowed_pass_still_names_its_waivers():
    """A narrowed run (one suite file) with a waiver keeps both facts on its line."""
    cut = {"text": "suites/admin_access; 4 of 90 tests"}
    data = {"verdict": "NARROWED-PASS", "profile": "standard", "narrowed": cut, "waived": ["admin_access"]}
    line = scope.verdict_line({**data, "notQualified": ["admin_access"]})
    assert line == (
        "PASS (narrowed: suites/admin_access; 4 of 90 tests; waived: admin_access; not qualified: admin_access)"
        " — not a qualification of profile standard"
    ), line


def test_a_driver_defect_raised_as_an_exception_counts_failed_not_broken():
    """A kubelet FailedPrepareDynamicResources ends a wait with WaitFailed (a driver defect): Allure calls it
    broken, the verdict counts it failed; an infrastructure error stays broken."""
    from conformance.reporting import results  # noqa: PLC0415

    def rec(message: str, failure_class: str):
        labels = [{"name": "failure_class", "value": failure_class}]
        data = {"name": "t", "status": "broken", "statusDetails": {"message": message}, "labels": labels}
        return results.record_from(data)

    wait = rec("conformance.core.errors.WaitFailed: kubelet could not prepare the pod's claims", "driver-defect")
    assert (wait.status, wait.failure_class) == ("failed", "driver-defect")
    down = rec("conformance.core.errors.ClusterUnavailable: refused", "infrastructure")
    assert (down.status, down.failure_class) == ("broken", "infrastructure")


def test_a_capability_that_failed_shows_the_failure_not_the_skips_beside_it():
    """The reasons of a failing capability name its failures only."""
    tests = [
        {"id": "a", "status": "failed", "reason": "AssertionError: wrong device", "capabilities": ["x"], "areas": []},
        {"id": "b", "status": "skipped", "reason": "no fitting device", "capabilities": ["x"], "areas": []},
    ]
    (cap,) = [c for c in summary._capabilities(tests, {}) if c["name"] == "x"]
    assert cap["status"] == "fail" and cap["reasons"] == ["a: AssertionError: wrong device"], cap


def test_plain_pytest_ends_with_the_same_verdict_line(tmp_path):
    """A plain ``pytest --report-dir`` session (no ``dra-conformance run``) prints the verdict line of
    :func:`scope.judge` at session finish, and exits 1 when the summary's rules fail though every test passed."""
    from tests.reporting.conftest import run_sample, sample_run_json  # noqa: PLC0415

    proc = run_sample(tmp_path / "ok", fail=False, run_json=sample_run_json(declared_capabilities=[]))
    out = proc.stdout + proc.stderr
    # the sample's broken-cluster test passes with SAMPLE_FAIL=0; its prioritized-list test skips
    assert proc.returncode == 0, out
    line = "PASS (not qualified: prioritized_list; outside profile full: api_v1, admin_access, podresources)"
    assert f"VERDICT: {line}" in out, out
    assert scope.judge(tmp_path / "ok")[0] == line
    proc = run_sample(tmp_path / "held", "-k", "claim_allocated", fail=False)  # declared shared_claims not run
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "VERDICT: FAIL (declared capability driver.shared_claims" in out, out


def test_a_profile_that_leaves_mission_areas_out_never_gives_a_bare_pass():
    """A core run passes with the mission areas its profile has no test of named (issue 24 §1: never a bare
    PASS over an untested area); a narrowed run's line already says it is not a qualification."""
    areas = [{"name": "allocation", "status": "pass"}, {"name": "admin_access", "status": "not-tested"}]
    data = {"verdict": "PASS", "profile": "core", "narrowed": None, "missionAreas": areas}
    assert scope.verdict_line(data) == "PASS (outside profile core: admin_access)"
    assert scope.verdict_line({**data, "missionAreas": areas[:1]}) == "PASS"


def test_not_claimed_lists_the_surge_update_when_the_profile_does_not_declare_it(tmp_path):
    """A DaemonSet-deployed profile without ``rolling_update: surge``: RST-10 skips, and summary.md says so;
    a handle that runs no plugin DaemonSet (the deployer cannot) is not "not claimed"."""
    from conformance.drivers import profiles  # noqa: PLC0415
    from conformance.drivers.base import DeployedDriver  # noqa: PLC0415
    from conformance.drivers.daemonset_plugin import DaemonSetDriver  # noqa: PLC0415
    from conformance.runner.facts import disruptions  # noqa: PLC0415

    (tmp_path / "c").mkdir()
    raw = {
        "name": "p",
        "driver": "gpu.example.com",
        "device_classes": ["gpu.example.com"],
        "visibility": {"env_regex": "^GPU="},
        "deploy": {"mode": "helm", "chart": "c/", "release": "r"},
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    prof = profiles.load(str(tmp_path / "p.yaml"))

    def entry(handle) -> dict:
        able, evidence = disruptions(None, handle)["driver_surge_update"]
        return {"name": "driver_surge_update", "declared": False, "available": able, "evidence": evidence}

    daemonsets = DaemonSetDriver.of(prof, "helm", k8s=object(), daemonset_namespaces=("ns",))
    assert scope.not_claimed([entry(daemonsets)]) == ["rolling update with surge"]
    assert scope.not_claimed([entry(DeployedDriver.of(prof, "preinstalled"))]) == []


def test_the_consumed_capacity_signal_is_not_claimed_only_where_consumable_capacity_is():
    """CAP-04 without a ``consumed_capacity_signal`` is listed for a driver that claims consumable capacity
    (declared, or its slices show it) and left out for every other driver."""
    signal = {
        "name": "driver.consumed_capacity_signal",
        "declared": False,
        "available": False,
        "evidence": "profile p names no consumed_capacity_signal (granted capacity not shown: publish-only)",
    }
    claims = {"name": "driver.consumable_capacity", "declared": True, "available": True, "evidence": "declares"}
    shown = {**claims, "declared": False, "evidence": "devices set allowMultipleAllocations"}
    none = {**claims, "declared": False, "available": False, "evidence": "does not declare"}
    assert scope.not_claimed([claims, signal]) == ["consumed capacity signal"]
    assert scope.not_claimed([shown, signal]) == ["consumed capacity signal"]
    assert scope.not_claimed([none, signal]) == ["consumable capacity"]
    assert scope.not_claimed([signal]) == []


def test_every_opt_in_the_profile_names_has_a_not_claimed_label():
    """The profile-named opt-ins (driver lifecycle disruptions, identity patterns) each have a headline label,
    so a skip for want of them is never silent."""
    from conformance.core import profile_identity  # noqa: PLC0415

    wanted = {d for d in capabilities.DISRUPTIONS if d.startswith("driver_") and d != "driver_reinstall"}
    wanted |= {f"driver.{k}" for k in profile_identity.PROFILE_PATTERNS}
    assert wanted <= set(scope.NOT_CLAIMED), sorted(wanted - set(scope.NOT_CLAIMED))
