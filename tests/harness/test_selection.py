"""Unit tests: capabilities from facts, and selection (deselect by profile, skip with evidence, fail when a
declared capability is not delivered)."""

import pytest

from conformance.core import capabilities, profile, selection
from conformance.core.errors import ConfigError

_RAW = {
    "name": "p",
    "driver": "gpu.example.com",
    "device_classes": ["gpu.example.com"],
    "visibility": {"env_regex": "x"},
    "capabilities": {"multiple_devices": True, "shared_claims": True, "partitions": False, "admin_access": True},
}
PROFILE = profile.parse(_RAW, source="p.yaml")


def _facts(devices_per_node=2, gates=None):
    devices = [
        {"node": n, "pool": n, "device": f"d{i}", "attributes": {}} for n in ("a", "b") for i in range(devices_per_node)
    ]
    return {
        "served_versions": {"v1": ["deviceclasses", "resourceclaims"], "v1beta1": []},
        "feature_gates": gates if gates is not None else {"DRAAdminAccess": True},
        "devices": devices,
        "node_access": (True, "local"),
        "k8s_version": "v1.34.4",
    }


def test_capabilities_have_evidence():
    caps = capabilities.evaluate(_facts(), PROFILE)
    assert caps.has("api.v1beta1") and not caps.has("api.v1beta2")
    assert "v1, v1beta1" in caps.evidence("api.v1beta2")
    assert caps.has("multi_node") and caps.has("driver.multiple_devices") and caps.has("driver.admin_access")
    assert not caps.has("driver.partitions") and "does not declare" in caps.evidence("driver.partitions")
    assert not caps.has("gate.DRADeviceTaints") and "not reported" in caps.evidence("gate.DRADeviceTaints")


def test_declared_but_undelivered_capability_fails_instead_of_skipping():
    caps = capabilities.evaluate(_facts(devices_per_node=1), PROFILE)
    decision = selection.decide(["core"], ["driver.multiple_devices"], "standard", caps)
    assert decision.action == "fail" and "declared but not delivered" in decision.reason


def test_missing_cluster_capability_skips_with_evidence():
    caps = capabilities.evaluate(_facts(gates={"DRAAdminAccess": False}), PROFILE)
    decision = selection.decide(["standard"], ["driver.admin_access"], "standard", caps)
    assert decision.action == "skip"
    assert decision.reason.startswith("driver.admin_access not available: ") and "DRAAdminAccess" in decision.reason


@pytest.mark.parametrize(
    "selected, marker, action",
    [
        ("core", "standard", "deselect"),
        ("standard", "core", "run"),
        ("full", "disruptive", "deselect"),
        ("disruptive", "full", "run"),
    ],
)
def test_profiles_nest(selected, marker, action):
    assert selection.decide([marker], [], selected, None).action == action


def test_unknown_capability_and_double_profile_are_config_errors():
    with pytest.raises(ConfigError):
        selection.decide(["core"], ["warp_drive"], "core", None)
    with pytest.raises(ConfigError):
        selection.decide(["core", "full"], [], "full", None)


def test_capabilities_round_trip_for_workers():
    caps = capabilities.evaluate(_facts(), PROFILE)
    assert capabilities.Capabilities.from_dict(caps.as_dict()) == caps


@pytest.mark.parametrize("version,available", [("v1.34.4", False), ("v1.35.4", True), ("v1.37.2", True)])
def test_distinct_attribute_follows_the_release_and_the_gate(version, available):
    facts = {**_facts(gates={"DRAConsumableCapacity": True}), "k8s_version": version}
    cap = capabilities.evaluate(facts, PROFILE).items["allocator.distinct_attribute"]
    assert cap.available is available and version in cap.evidence, cap
    off = capabilities.evaluate(
        {**_facts(gates={"DRAConsumableCapacity": False}), "k8s_version": "v1.37.2"}, PROFILE
    ).items["allocator.distinct_attribute"]
    assert not off.available and "DRAConsumableCapacity" in off.evidence


def test_admin_access_signal_needs_a_profile_regex():
    facts = _facts(gates={"DRAAdminAccess": True})
    without = capabilities.evaluate(facts, PROFILE).items["driver.admin_access_signal"]
    assert not without.available and "admin_access_signal" in without.evidence
    with_signal = profile.parse({**_RAW, "admin_access_signal": "^ADMIN=1$"}, source="p.yaml")
    assert capabilities.evaluate(facts, with_signal).items["driver.admin_access_signal"].available
    with pytest.raises(ConfigError, match="admin_access_signal"):
        profile.parse({**_RAW, "admin_access_signal": "(["}, source="p.yaml")


@pytest.mark.parametrize(
    "kubelet, apiserver, available, fragment",
    [
        (True, True, True, "a=1, b=1; kube-apiserver metrics"),
        (True, False, False, "= 0"),
        (False, True, False, "a=1, b=0"),
    ],
)
def test_resource_health_gate_needs_every_kubelet_and_the_apiserver(kubelet, apiserver, available, fragment):
    """ResourceHealthStatus: kubelets write allocatedResourcesStatus, the apiserver drops it while its gate is
    off, so the capability needs both and its evidence names both."""
    facts = _facts(gates={"ResourceHealthStatus": apiserver})
    facts["kubelet_gates"] = {"a": {"ResourceHealthStatus": True}, "b": {"ResourceHealthStatus": kubelet}}
    cap = capabilities.evaluate(facts, PROFILE).items["gate.ResourceHealthStatus"]
    assert cap.available == available and fragment in cap.evidence, cap
