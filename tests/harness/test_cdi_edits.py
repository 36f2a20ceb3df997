"""conformance.node.cdi.device_edits / same_edits: a claim's CDI spec compared before and after a driver upgrade
by what it gives a container per CDI device ID, not by its bytes."""

from __future__ import annotations

import json

import yaml

from conformance.node import cdi
from reference_driver import cdi as ref_cdi
from reference_driver.inventory import SimulatedInventory, SimulatedSpec

UID = "0b6a8d52-93c9-4c34-8a57-2f1f4b2c7e10"


def _spec(version="0.3.0", env=("GPU_DEVICE_0=gpu-0",), nodes=(), common=None) -> dict:
    dev = {"name": f"{UID}-gpu-0", "containerEdits": {"env": list(env)}}
    if nodes:
        dev["containerEdits"]["deviceNodes"] = [dict(n) for n in nodes]
    spec = {"cdiVersion": version, "kind": "gpu.example.com/gpu", "devices": [dev]}
    if common:
        spec["containerEdits"] = common
    return spec


def _files(spec: dict, name: str = f"example_claim-{UID}.json", as_yaml: bool = False) -> dict[str, str]:
    return {name: yaml.safe_dump(spec) if as_yaml else json.dumps(spec)}


def test_same_edits_ignore_version_file_name_format_order_and_node_details():
    before = _spec(env=("A=1", "B=2"), nodes=[{"path": "/dev/x"}])
    after = _spec(version="0.6.0", env=("B=2", "A=1"), nodes=[{"path": "/dev/x", "hostPath": "/dev/x", "major": 1}])
    after["annotations"] = {"new": "yes"}
    same, evidence = cdi.same_edits(_files(before), _files(after, "renamed.yaml", as_yaml=True))
    assert same, evidence
    assert f"gpu.example.com/gpu={UID}-gpu-0" in evidence


def test_changed_env_device_node_or_mount_names_the_device_and_the_change():
    before = _spec(nodes=[{"path": "/dev/x"}])
    for after, shown in (
        (_spec(env=("GPU_DEVICE_1=gpu-1",), nodes=[{"path": "/dev/x"}]), "GPU_DEVICE_1=gpu-1"),
        (_spec(nodes=[{"path": "/dev/x", "hostPath": "/dev/y"}]), "/dev/y"),
        (_spec(nodes=[{"path": "/dev/x"}], common={"mounts": [{"hostPath": "/h", "containerPath": "/c"}]}), "/c"),
    ):
        same, evidence = cdi.same_edits(_files(before), _files(after))
        assert not same and f"gpu.example.com/gpu={UID}-gpu-0" in evidence and shown in evidence, evidence


def test_a_renamed_or_missing_device_id_is_a_change_and_nothing_proves_nothing():
    renamed = _spec()
    renamed["devices"][0]["name"] = f"{UID}-gpu-0-x"
    same, evidence = cdi.same_edits(_files(_spec()), _files(renamed))
    assert not same and "gone" in evidence and "new" in evidence
    assert not cdi.same_edits({}, {})[0]


def test_the_reference_driver_fault_rewrite_is_caught():
    """A spec the reference driver builds, and the same spec retargeted to the next device as the fault
    upgrade-rewrites-cdi-spec writes it: same CDI IDs, other env."""
    snap = SimulatedInventory(SimulatedSpec(count=2), "node-a").snapshot()
    ref = ref_cdi.ClaimRef("ns", "c", UID)
    alloc = ref_cdi.AllocatedDevice(request="gpu", pool="node-a", device="gpu-0")
    spec, _ = ref_cdi.build_spec(ref, [(alloc, snap.device("gpu-0"))])
    rewritten = {
        **spec,
        "devices": [ref_cdi.retargeted(spec["devices"][0], snap.device("gpu-0"), snap.device("gpu-1"))],
    }
    assert cdi.same_edits(_files(spec), _files(spec))[0]
    same, evidence = cdi.same_edits(_files(spec), _files(rewritten))
    assert not same and "DRA_GPU_DEVICE_GPU_1=gpu-1" in evidence and "gone" not in evidence, evidence


def test_a_changed_minor_of_a_typed_device_node_and_net_devices_are_changes():
    """Review 6 finding 4: a node with type and major is created from its numbers, so another minor is another
    device under the same path; netDevices and additionalGIDs are what a container gets too."""
    typed = {"path": "/dev/gpu", "type": "c", "major": 195}
    before = _spec(nodes=[{**typed, "minor": 0}])
    same, evidence = cdi.same_edits(_files(before), _files(_spec(nodes=[{**typed, "minor": 1}])))
    assert not same and "195" in evidence, evidence
    edits = cdi.device_edits(_files(_spec()))
    assert set(next(iter(edits.values()))) == {"env", "deviceNodes", "mounts", "netDevices", "additionalGIDs"}
