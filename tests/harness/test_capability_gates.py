"""Unit tests: a declared gated capability is excused (``cluster_lacks``) only when its gate is KNOWN off, and a
driver feature its ResourceSlices publish counts as declared even when the profile is silent (two ways a broken
driver used to get an undeserved PASS)."""

import json

import pytest

from conformance.core import capabilities, errors, profile, selection
from conformance.core.config import from_options
from conformance.k8s import discovery
from conformance.runner.session import Session, record_exercised
from tests.harness.test_registry import shipped

DRIVER = "gpu.example.com"
_RAW = {"name": "p", "driver": DRIVER, "device_classes": [DRIVER], "visibility": {"env_regex": "x"}}
DECLARING = profile.parse({**_RAW, "capabilities": {"admin_access": True, "prioritized_list": True}}, source="p.yaml")
SILENT = profile.parse({**_RAW, "capabilities": {}}, source="p.yaml")
FORBIDDEN = 'GET /metrics: 403 Forbidden: forbidden: User "ci" cannot get path "/metrics"'
SLICE_FEATURES = {  # capability -> (device fact, value, gate)
    "driver.partitions": ("consumes_counters", [{"counterSet": "gpu-0"}], "DRAPartitionableDevices"),
    "driver.consumable_capacity": ("allow_multiple_allocations", True, "DRAConsumableCapacity"),
    "driver.published_taints": ("taints", [{"key": "k", "effect": "NoSchedule"}], "DRADeviceTaints"),
    "driver.binding_conditions": ("binding_conditions", ["Attached"], "DRADeviceBindingConditions"),
}
ALL_ON = {gate: True for _, _, gate in SLICE_FEATURES.values()}


def _facts(gates=None, error="", configured=None, **device_facts):
    devices = [{"node": "a", "pool": "a", "device": f"d{i}", **device_facts} for i in range(2)]
    return {
        "served_versions": {"v1": []},
        "feature_gates": gates or {},
        "feature_gates_error": error,
        "configured_gates": configured or {},
        "devices": devices,
        "k8s_version": "v1.34.4",
    }


def test_unreadable_metrics_do_not_excuse_declared_gated_capabilities():
    """Given kube-apiserver /metrics answers 403, when the profile declares admin_access and prioritized_list,
    then both are unavailable, declared, NOT cluster_lacks, and the evidence names the 403 and the fix."""
    caps = capabilities.evaluate(_facts(error=FORBIDDEN), DECLARING)
    gate = caps.items["gate.DRAAdminAccess"]
    assert not gate.available and gate.gate_unknown and "403 Forbidden" in gate.evidence
    for name in ("driver.admin_access", "driver.prioritized_list"):
        cap = caps.items[name]
        assert not cap.available and cap.declared and not cap.cluster_lacks and not cap.broken, cap
        assert "could not be read" in cap.evidence and 'nonResourceURLs: ["/metrics"]' in cap.evidence
        assert "403 Forbidden" in cap.evidence
    assert capabilities.Capabilities.from_dict(caps.as_dict()) == caps


def test_gate_missing_from_readable_metrics_is_unknown_not_off():
    cap = capabilities.evaluate(_facts(gates={"DRAAdminAccess": True}), DECLARING).items["driver.prioritized_list"]
    assert not cap.available and not cap.cluster_lacks and "not reported by kube-apiserver metrics" in cap.evidence


@pytest.mark.parametrize(
    "facts",
    [_facts(gates={"DRAAdminAccess": False}), _facts(error=FORBIDDEN, configured={"DRAAdminAccess": False})],
    ids=["metric-reads-0", "configured-false"],
)
def test_gate_known_off_still_excuses_a_declared_capability(facts):
    cap = capabilities.evaluate(facts, DECLARING).items["driver.admin_access"]
    assert not cap.available and cap.cluster_lacks and cap.declared and "DRAAdminAccess" in cap.evidence
    decision = selection.decide(
        ["standard"], ["driver.admin_access"], "standard", capabilities.evaluate(facts, DECLARING)
    )
    assert decision.action == "skip"


def test_a_gate_stated_off_by_the_user_does_not_excuse_a_declared_capability():
    """``--cluster-feature-gates DRAAdminAccess=false`` on an existing cluster whose metrics are unreadable is the
    user's word, not a measurement: the declared capability is unavailable and not excused (the verdict fails
    it, naming the statement); a gate stated on still lets its tests run (they then prove it)."""
    stated = {**_facts(error=FORBIDDEN, configured={"DRAAdminAccess": False}), "configured_gates_stated": True}
    cap = capabilities.evaluate(stated, DECLARING).items["driver.admin_access"]
    assert not cap.available and not cap.cluster_lacks and cap.declared, cap
    assert "--cluster-feature-gates states DRAAdminAccess=false" in cap.evidence
    on = {**_facts(error=FORBIDDEN, configured={"DRAAdminAccess": True}), "configured_gates_stated": True}
    assert capabilities.evaluate(on, DECLARING).items["gate.DRAAdminAccess"].available


def test_apiserver_feature_gates_reports_why_metrics_are_unreadable():
    class Refusing:
        def get_raw(self, path):
            raise errors.Forbidden(403, "Forbidden", "cannot get path /metrics", request=f"GET {path}")

    class Serving:
        def get_raw(self, path):
            return 'kubernetes_feature_enabled{name="DRAAdminAccess",stage="BETA"} 0\n'

    gates, error = discovery.apiserver_feature_gates(Refusing())
    assert gates == {} and "403 Forbidden" in error and "/metrics" in error
    assert discovery.apiserver_feature_gates(Serving()) == ({"DRAAdminAccess": False}, "")


@pytest.mark.parametrize("name", sorted(SLICE_FEATURES))
def test_feature_published_in_slices_counts_as_declared(name):
    """Given a profile that declares nothing, when the driver's slices publish the feature and its gate is on
    (or unknown: the apiserver stored the fields), then the capability is available and declared."""
    field, value, gate = SLICE_FEATURES[name]
    for facts in (_facts(gates=ALL_ON, **{field: value}), _facts(error=FORBIDDEN, **{field: value})):
        cap = capabilities.evaluate(facts, SILENT).items[name]
        assert cap.available and cap.declared and not cap.broken, cap
        assert "published in the driver's ResourceSlices but not declared by profile p" in cap.evidence
        assert "a/d0" in cap.evidence


@pytest.mark.parametrize("name", sorted(SLICE_FEATURES))
def test_unpublished_or_gated_off_undeclared_feature_stays_undeclared(name):
    field, value, gate = SLICE_FEATURES[name]
    plain = capabilities.evaluate(_facts(gates=ALL_ON), SILENT).items[name]
    assert not plain.available and not plain.declared and "does not declare" in plain.evidence
    off = capabilities.evaluate(_facts(gates={**ALL_ON, gate: False}, **{field: value}), SILENT).items[name]
    assert not off.available and not off.declared and not off.cluster_lacks and gate in off.evidence


def test_declared_flag_follows_the_profile_for_other_driver_capabilities():
    caps = capabilities.evaluate(_facts(gates={"DRAAdminAccess": True, "DRAPrioritizedList": True}), DECLARING)
    assert caps.items["driver.admin_access"].declared and caps.items["driver.prioritized_list"].declared
    assert caps.items["driver.shared_claims"].declared  # a mission capability left out is held (issue 24 §1)
    assert not caps.items["driver.fault_injection"].declared


@pytest.mark.parametrize("said", [{}, {"multiple_devices": False}])
def test_multiple_devices_follows_the_slices_whatever_the_profile_says(said):
    """Review 5 finding 5: a profile silent about multiple_devices or saying false cannot opt out of the
    multi-device tests when a node publishes two devices; with one device per node it stays unavailable."""
    quiet = profile.parse({**_RAW, "capabilities": said}, source="p.yaml")
    cap = capabilities.evaluate(_facts(), quiet).items["driver.multiple_devices"]
    assert cap.available and cap.declared and "{'a': 2}" in cap.evidence and "held to it as measured" in cap.evidence
    assert ("declares multiple_devices: false" in cap.evidence) == bool(said)
    one = {**_facts(), "devices": [{"node": n, "pool": n, "device": "d0"} for n in ("a", "b")]}
    cap = capabilities.evaluate(one, quiet).items["driver.multiple_devices"]
    assert not cap.available and not cap.declared and "does not declare multiple_devices" in cap.evidence


class _Item:
    """A selected test item stand-in with one ``requires`` marker."""

    def __init__(self, *caps):
        self.caps = caps

    def iter_markers(self, name):
        return [pytest.mark.requires(*self.caps).mark] if name == "requires" else []


def test_run_json_declares_what_workers_exercised_and_what_the_slices_publish(tmp_path):
    """Given an xdist controller that collects nothing and a worker that collected tests requiring admin_access
    and partitions, when the controller writes run.json, then both are declared: admin_access by the profile,
    partitions because the slices publish it although the reference profile does not declare it."""
    cfg = from_options({"driver": "reference", "run_id": "r1", "report_dir": str(tmp_path)})
    controller, worker = Session(cfg, tmp_path, shipped()), Session(cfg, tmp_path, shipped())
    facts = _facts(gates={"DRAAdminAccess": True, "DRAPartitionableDevices": True}, shared_counters=True)
    controller.capabilities = capabilities.evaluate(facts, controller.profile)
    record_exercised(worker, [_Item("driver.admin_access", "driver.partitions"), _Item("driver.consumable_capacity")])
    controller.write_run_json()
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["declared_capabilities"] == ["driver.admin_access", "driver.partitions"]
    assert (
        run["capabilities"]["driver.partitions"]["declared"] and run["capabilities"]["driver.partitions"]["available"]
    )
    assert not run["capabilities"]["driver.consumable_capacity"]["declared"]
