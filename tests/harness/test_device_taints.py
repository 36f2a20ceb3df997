"""Unit tests: device taints in capability discovery (driver.published_taints: delivered, broken, gated) and the
device picks of the taints suite (conformance.dra.device_taints)."""

import pytest

from conformance.core import capabilities, profile, selection
from conformance.core.objects import Obj
from conformance.dra import device_taints
from conformance.dra.inventory import Inventory, facts

DRIVER = "gpu.example.com"
TAINT = {"key": "example.com/maintenance", "value": "x", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}


def _slice(node, tainted=(), count=3):
    devices = [
        {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}, **({"taints": [TAINT]} if i in tainted else {})}
        for i in range(count)
    ]
    spec = {"driver": DRIVER, "nodeName": node, "devices": devices, "pool": {"name": node, "generation": 1}}
    return Obj({"kind": "ResourceSlice", "metadata": {"name": node}, "spec": spec})


def _profile(**caps):
    raw = {"name": "p", "driver": DRIVER, "device_classes": [DRIVER], "visibility": {"env_regex": "x"}}
    return profile.parse({**raw, "capabilities": caps}, source="p.yaml")


def _facts(slices, gate=True):
    return {"feature_gates": {"DRADeviceTaints": gate}, "devices": facts(slices), "k8s_version": "v1.34.4"}


def test_published_taints_delivered_broken_gated_or_undeclared():
    declared = _profile(taints=True, published_taints=True)
    caps = capabilities.evaluate(_facts([_slice("a", tainted=(2,))]), declared)
    assert caps.has("driver.published_taints") and "a/gpu-2" in caps.evidence("driver.published_taints")
    assert caps.has("driver.taints")
    broken = capabilities.evaluate(_facts([_slice("a")]), declared)
    decision = selection.decide(["full"], ["driver.published_taints"], "full", broken)
    assert decision.action == "fail" and "no device of gpu.example.com has taints" in decision.reason
    gated = capabilities.evaluate(_facts([_slice("a")], gate=False), declared)
    assert selection.decide(["full"], ["driver.taints"], "full", gated).action == "skip"
    assert "DRADeviceTaints" in gated.evidence("driver.published_taints")
    plain = capabilities.evaluate(_facts([_slice("a")]), _profile(taints=True))
    assert "does not declare published_taints" in plain.evidence("driver.published_taints")
    silent = capabilities.evaluate(_facts([_slice("a", tainted=(2,))]), _profile(taints=True))
    published = silent.items["driver.published_taints"]
    assert published.available and published.declared and "not declared by profile p" in published.evidence


def test_untainted_target_names_one_device_and_the_free_rest():
    inv = Inventory.from_slices(DRIVER, [_slice("a", tainted=(0, 1)), _slice("b", tainted=(2,))])
    t = device_taints.untainted(inv, f"{DRIVER}/index")
    assert (t.node, t.pool, t.name, t.others, t.taints) == ("b", "b", "gpu-0", ("gpu-1",), ())
    assert t.selector == 'device.attributes["gpu.example.com"].index == 0'
    with pytest.raises(LookupError, match="a/gpu-0"):
        device_taints.untainted(Inventory.from_slices(DRIVER, [_slice("a", tainted=(0, 1))]), f"{DRIVER}/index")


def test_published_target_is_a_tainted_device():
    inv = Inventory.from_slices(DRIVER, [_slice("a", tainted=(2,))])
    t = device_taints.published(inv, f"{DRIVER}/index")
    assert (t.name, t.others, t.taints) == ("gpu-2", ("gpu-0", "gpu-1"), (TAINT,))
    with pytest.raises(LookupError, match="publishes no device"):
        device_taints.published(Inventory.from_slices(DRIVER, [_slice("a")]), f"{DRIVER}/index")


@pytest.mark.parametrize(
    "version, gate, available", [("v1.34.4", True, False), ("v1.36.2", True, True), ("v1.36.2", False, False)]
)
def test_result_tolerations_follow_the_release_and_the_gate(version, gate, available):
    facts = {**_facts([_slice("a")], gate=gate), "k8s_version": version}
    cap = capabilities.evaluate(facts, _profile(taints=True)).items["allocator.result_tolerations"]
    assert cap.available is available, cap
    assert ("DRADeviceTaints" in cap.evidence) if not gate else (version in cap.evidence), cap


@pytest.mark.parametrize(("version", "gate"), [("v1.34.4", True), ("v1.37.2", True), ("v1.36.2", False)])
def test_admin_access_to_consumed_counters_is_a_known_allocator_gap(version, gate):
    """kubernetes/kubernetes#140729 (open): the allocator reserves an admin claim's counters, so admin access to a
    partition an ordinary claim holds is never allocated; found by the full profile on the partitions + taints +
    health combination (issue 24 §3). Not available on any release, and naming the gate when it is off."""
    facts = {**_facts([_slice("a")]), "k8s_version": version}
    facts["feature_gates"] = {**facts["feature_gates"], "DRAPartitionableDevices": gate}
    cap = capabilities.evaluate(facts, _profile(taints=True)).items["allocator.admin_access_counters"]
    assert cap.available is False, cap
    assert ("#140729" in cap.evidence) if gate else ("DRAPartitionableDevices" in cap.evidence), cap


def test_admin_counters_gap_says_how_each_release_was_established():
    """Breaker F3 (session 12): every minor of ``allocator.admin_access_counters`` carries a measurement or a
    source reading (file and library version), never a bare "not measured here", and the minors are the pinned
    releases of versions.toml (a new pin needs its own evidence). Independent of what the cache holds."""
    from conformance_lab.toolchain.versions import load  # noqa: PLC0415

    from conformance.core.release_gaps import ADMIN_COUNTERS_EVIDENCE, KNOWN_ALLOCATOR_GAPS  # noqa: PLC0415

    assert set(ADMIN_COUNTERS_EVIDENCE) == set(load().k8s_releases), ADMIN_COUNTERS_EVIDENCE
    for minor, evidence in KNOWN_ALLOCATOR_GAPS["allocator.admin_access_counters"].items():
        assert "not measured here" not in evidence, (minor, evidence)
        assert f"v{minor}." in evidence and ("measured on" in evidence or "read in" in evidence), (minor, evidence)
        assert evidence.endswith("(kubernetes/kubernetes#140729, open)"), evidence  # the scope box's "no fix yet"
