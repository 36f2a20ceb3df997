"""Unit tests: capabilities of the claim-status area (device status, binding conditions, the extended-resource
cleanup gap) and the judgements of conformance/dra/claimstatus.py on hand-made claims and pods."""

import pytest

from conformance.core import capabilities, profile
from conformance.core.objects import Obj
from conformance.dra import claimstatus

DRIVER = "gpu.example.com"
_RAW = {
    "name": "p",
    "driver": DRIVER,
    "device_classes": [DRIVER],
    "visibility": {"env_regex": "x"},
    "capabilities": {"device_status": True, "binding_conditions": True},
}
PROFILE = profile.parse(_RAW, source="p.yaml")
NOT_DECLARING = profile.parse({**_RAW, "capabilities": {}}, source="q.yaml")


def _facts(gates, binding=True, version="v1.34.4"):
    devices = [{"node": "a", "pool": "a", "device": "d0", "binding_conditions": ["Attached"] if binding else []}]
    return {"served_versions": {"v1": []}, "feature_gates": gates, "devices": devices, "k8s_version": version}


def test_device_status_and_binding_conditions_follow_gate_and_profile():
    on = {"DRAResourceClaimDeviceStatus": True, "DRADeviceBindingConditions": True}
    caps = capabilities.evaluate(_facts(on), PROFILE)
    assert caps.has("driver.device_status") and caps.has("driver.binding_conditions")
    off = capabilities.evaluate(_facts({"DRAResourceClaimDeviceStatus": True}), PROFILE)
    assert not off.has("driver.binding_conditions") and "DRADeviceBindingConditions" in off.evidence(
        "driver.binding_conditions"
    )
    assert not off.items["driver.binding_conditions"].broken, "a missing gate is a skip, not a driver failure"
    unpublished = capabilities.evaluate(_facts(on, binding=False), PROFILE).items["driver.binding_conditions"]
    assert not unpublished.available and unpublished.broken and "bindingConditions" in unpublished.evidence
    silent = capabilities.evaluate(_facts(on), NOT_DECLARING)
    assert not silent.has("driver.device_status") and "does not declare" in silent.evidence("driver.device_status")


@pytest.mark.parametrize(
    ("version", "gate", "available"), [("v1.34.4", True, False), ("v1.36.3", True, True), ("v1.36.3", False, False)]
)
def test_extended_claim_cleanup_gap_follows_release_and_gate(version, gate, available):
    cap = capabilities.evaluate(_facts({"DRAExtendedResource": gate}, version=version), PROFILE).items[
        "platform.extended_claim_cleanup_on_completion"
    ]
    assert cap.available is available, cap
    assert ("DRAExtendedResource" in cap.evidence) if not gate else (version in cap.evidence)


def _result(device, **extra):
    return {"request": "r", "driver": DRIVER, "pool": "a", "device": device, **extra}


def _cond(kind, status="True", when="2026-01-01T00:00:05Z"):
    return {"type": kind, "status": status, "reason": "R", "lastTransitionTime": when}


def _claim(results, devices, **meta):
    return Obj(
        {
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns", **meta},
            "status": {
                "allocation": {"devices": {"results": results}},
                "devices": devices,
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
            },
        }
    )


def test_device_status_problems_name_the_missing_and_the_foreign_device():
    good = {"driver": DRIVER, "pool": "a", "device": "d0", "conditions": [_cond("Ready")]}
    assert claimstatus.device_status_problems(_claim([_result("d0")], [good]), DRIVER) == []
    missing = claimstatus.device_status_problems(_claim([_result("d0"), _result("d1")], [good]), DRIVER)
    assert missing == ["status.devices entry for a/d1: 0 entries (want exactly one)"]
    foreign = {**good, "device": "d9"}
    problems = claimstatus.device_status_problems(_claim([_result("d0")], [good, foreign]), DRIVER)
    assert problems == ["status.devices names a/d9, not allocated to the claim"]
    bad = {**good, "conditions": [{"type": "Ready", "status": "Yes"}], "networkData": {"ips": ["10.0.0.1"]}}
    assert len(claimstatus.device_status_problems(_claim([_result("d0")], [bad]), DRIVER)) == 2
    assert claimstatus.device_status_problems(_claim([], []), DRIVER) == [
        f"claim c has no allocation result of driver {DRIVER}"
    ]


def _pod(scheduled="2026-01-01T00:00:06Z", mappings=None):
    return Obj(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
            "status": {
                "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}],
                "extendedResourceClaimStatus": {
                    "resourceClaimName": "c",
                    "requestMappings": mappings
                    if mappings is not None
                    else [{"containerName": "ctr", "resourceName": "x.test/gpu", "requestName": "r"}],
                },
            },
        }
    )


def test_binding_problems_need_true_conditions_before_scheduling():
    res = _result("d0", bindingConditions=["Attached"], bindingFailureConditions=["Failed"])
    entry = {"driver": DRIVER, "pool": "a", "device": "d0", "conditions": [_cond("Attached")]}
    assert claimstatus.binding_problems(_claim([res], [entry]), _pod(), DRIVER) == []
    assert (
        "before its binding conditions"
        in claimstatus.binding_problems(_claim([res], [entry]), _pod(scheduled="2026-01-01T00:00:04Z"), DRIVER)[0]
    )
    assert "True []" in claimstatus.binding_problems(_claim([res], []), _pod(), DRIVER)[0]
    failed = {**entry, "conditions": [_cond("Attached"), _cond("Failed")]}
    assert "failure True" in claimstatus.binding_problems(_claim([res], [failed]), _pod(), DRIVER)[0]
    assert "no bindingConditions" in claimstatus.binding_problems(_claim([_result("d0")], []), _pod(), DRIVER)[0]


def test_binding_order_is_judged_as_times_at_second_resolution():
    res = _result("d0", bindingConditions=["Attached"])
    entry = {"driver": DRIVER, "pool": "a", "device": "d0", "conditions": [_cond("Attached")]}
    same_second = _pod(scheduled="2026-01-01T00:00:05.900000+00:00")
    assert claimstatus.binding_problems(_claim([res], [entry]), same_second, DRIVER) == []
    earlier = _pod(scheduled="2026-01-01T01:00:04+01:00")  # 00:00:04Z, one second before the condition
    assert "before its binding conditions" in claimstatus.binding_problems(_claim([res], [entry]), earlier, DRIVER)[0]
    assert "cannot order" in claimstatus.binding_problems(_claim([res], [entry]), _pod(scheduled=""), DRIVER)[0]
    untimed = {**entry, "conditions": [{**_cond("Attached"), "lastTransitionTime": "soon"}]}
    assert "cannot order" in claimstatus.binding_problems(_claim([res], [untimed]), _pod(), DRIVER)[0]


def test_extended_claim_reference_and_problems():
    pod = _pod()
    ref = claimstatus.extended_claim(pod)
    assert (ref.kind, ref.name, ref.namespace, ref.uid) == ("ResourceClaim", "c", "ns", "")
    owned = {
        "annotations": {claimstatus.EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}],
    }
    claim = _claim([_result("d0")], [], **owned)
    claim.raw["spec"] = {"devices": {"requests": [{"name": "r"}]}}
    assert claimstatus.extended_claim_problems(pod, claim, "ctr", ["x.test/gpu"]) == []
    bare = _claim([_result("d0")], [])
    bare.raw["spec"] = {"devices": {"requests": [{"name": "other"}]}}
    problems = claimstatus.extended_claim_problems(_pod(mappings=[]), bare, "ctr", ["x.test/gpu"])
    assert len(problems) == 3, problems
    with pytest.raises(LookupError, match="extendedResourceClaimStatus"):
        claimstatus.extended_claim(Obj({"kind": "Pod", "metadata": {"name": "p"}, "status": {}}))
