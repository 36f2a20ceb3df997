"""Faults ``cdi-identity-swapped``, ``cdi-spec-all-devices``, ``cdi-node-unanswered``,
``cdi-node-hostpath-swapped`` and ``cdi-node-numbers-swapped`` (reference_driver/identity.py): the CDI spec says
another device is, or every device is, the claim's, while the device-name env line stays right."""

from __future__ import annotations

import json
import os

import pytest

from reference_driver import DRIVER_NAME
from reference_driver.cdi import CdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.claims import ClaimRef
from reference_driver.faults import Faults
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.base import InventoryError
from reference_driver.inventory.simulated import parse_spec
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import NODE, claim, result

SHARED = {"count": 1, "allowMultipleAllocations": True, "capacityRequestPolicy": {"default": "1Gi", "min": "1Gi"}}

REF = ClaimRef("ns", "claim-1", "uid-1")


def _spec(state) -> dict:
    return json.loads(state.store.path("uid-1").read_text())


def _env(spec: dict, prefix: str) -> list[str]:
    return [e for d in spec["devices"] for e in d["containerEdits"].get("env", []) if e.startswith(prefix)]


def _uuid(state, device: str) -> str:
    return str(state._snapshot().device(device).attribute("uuid"))


def test_swapped_identity_carries_the_next_devices_uuid_under_its_own_name(make_state, source):
    source.add(claim(results=[result("gpu-3")]))
    state = make_state(Faults.parse("cdi-identity-swapped"))
    devices = state.prepare(REF)
    spec = _spec(state)
    assert [d.device for d in devices] == ["gpu-3"]
    assert _env(spec, "DRA_GPU_DEVICE_") == ["DRA_GPU_DEVICE_GPU_3=gpu-3"]  # the name stays right
    assert _env(spec, "DRA_GPU_GPU_3_UUID=") == [f"DRA_GPU_GPU_3_UUID={_uuid(state, 'gpu-0')}"]
    assert "containerEdits" not in spec


def test_all_devices_puts_every_devices_uuid_into_the_spec_wide_edits(make_state, source):
    source.add(claim(results=[result("gpu-1")]))
    state = make_state(Faults.parse("cdi-spec-all-devices"))
    state.prepare(REF)
    spec = _spec(state)
    wanted = [f"DRA_GPU_GPU_{i}_UUID={_uuid(state, f'gpu-{i}')}" for i in range(4)]
    assert spec["containerEdits"]["env"] == wanted
    assert _env(spec, "DRA_GPU_DEVICE_") == ["DRA_GPU_DEVICE_GPU_1=gpu-1"]


def test_without_the_faults_the_spec_carries_the_devices_own_uuid_only(make_state, source):
    source.add(claim(results=[result("gpu-3")]))
    state = make_state()
    state.prepare(REF)
    spec = _spec(state)
    assert _env(spec, "DRA_GPU_GPU_3_UUID=") == [f"DRA_GPU_GPU_3_UUID={_uuid(state, 'gpu-3')}"]
    assert "containerEdits" not in spec


@pytest.mark.parametrize(("faults", "shown"), [("", "1Gi"), ("capacity-granted-whole", "80Gi")])
def test_capacity_granted_whole_shows_the_whole_device_in_the_env(tmp_path, source, faults, shown):
    """A 1Gi share of an 80Gi multi-allocatable GPU: its CDI env shows 1Gi, or with the fault the whole 80Gi."""
    inventory = SimulatedInventory(parse_spec(SHARED), NODE)
    store, checkpoint = CdiStore(tmp_path / "cdi"), Checkpoint(tmp_path / "checkpoint.json")
    state = DeviceState(DRIVER_NAME, {NODE}, inventory.snapshot, source, store, checkpoint, Faults.parse(faults))
    source.add(
        claim(
            results=[
                result("gpu-0", shareID="0b6a8d52-93c9-4c34-8a57-2f1f4b2c7e10", consumedCapacity={"memory": "1Gi"})
            ]
        )
    )
    state.prepare(REF)
    assert [e.split("=")[1] for e in _env(_spec(state), "DRA_GPU_GPU_0_0B6A8D52_CONSUMED_MEMORY=")] == [shown]


def _nodes(spec: dict) -> dict[str, list[dict]]:
    return {d["name"]: d["containerEdits"].get("deviceNodes", []) for d in spec["devices"]}


def test_each_simulated_device_injects_its_own_node_backed_by_its_own_host_node(make_state, source):
    """A simulated GPU's CDI entry names its node ``/dev/dra-<name>`` with the hostPath of its index (gpu-3:
    /dev/urandom; a container shows which device it got, as ``/dev/nvidia<i>`` does), published as attribute
    ``hostDeviceNode``; ``deviceNodes: false`` leaves both out."""
    source.add(claim(results=[result("gpu-3")]))
    state = make_state()
    ids = [i for d in state.prepare(REF) for i in d.cdi_ids]
    spec = _spec(state)
    assert _nodes(spec) == {"uid-1-gpu-3": [{"path": "/dev/dra-gpu-3", "hostPath": "/dev/urandom"}]}
    assert [i.split("=", 1)[1] for i in ids] == ["uid-1-gpu-3"]
    devices = state._snapshot().devices
    assert [d.node_host for d in devices] == ["/dev/null", "/dev/zero", "/dev/full", "/dev/urandom"]
    assert [d.attribute("hostDeviceNode") for d in devices] == ["null", "zero", "full", "urandom"]
    bare = SimulatedInventory(parse_spec({"deviceNodes": False}), NODE).snapshot().devices[0]
    assert bare.device_nodes == () and bare.attribute("hostDeviceNode") is None
    with pytest.raises(InventoryError, match="deviceNodes"):
        parse_spec({"deviceNodes": "yes"})


def test_node_unanswered_moves_the_node_to_an_entry_whose_id_is_not_answered(make_state, source):
    """Fault ``cdi-node-unanswered``: the spec still names /dev/dra-gpu-3, in an entry ``<entry>-node`` that is not
    among the answered CDI IDs, so the runtime never injects it; the answered entry keeps its env."""
    source.add(claim(results=[result("gpu-3")]))
    state = make_state(Faults.parse("cdi-node-unanswered"))
    ids = [i.split("=", 1)[1] for d in state.prepare(REF) for i in d.cdi_ids]
    spec = _spec(state)
    assert _nodes(spec) == {
        "uid-1-gpu-3": [],
        "uid-1-gpu-3-node": [{"path": "/dev/dra-gpu-3", "hostPath": "/dev/urandom"}],
    }
    assert ids == ["uid-1-gpu-3"] and _env(spec, "DRA_GPU_DEVICE_") == ["DRA_GPU_DEVICE_GPU_3=gpu-3"]


def test_hostpath_swapped_keeps_the_path_and_backs_it_by_the_next_devices_host_node(make_state, source):
    """Fault ``cdi-node-hostpath-swapped``: gpu-3's entry keeps /dev/dra-gpu-3 and its env, but the node behind it
    is gpu-0's /dev/null (the next device by name, wrapping), not its own /dev/urandom."""
    source.add(claim(results=[result("gpu-3")]))
    state = make_state(Faults.parse("cdi-node-hostpath-swapped"))
    state.prepare(REF)
    spec = _spec(state)
    assert _nodes(spec) == {"uid-1-gpu-3": [{"path": "/dev/dra-gpu-3", "hostPath": "/dev/null"}]}
    assert _env(spec, "DRA_GPU_GPU_3_UUID=") == [f"DRA_GPU_GPU_3_UUID={_uuid(state, 'gpu-3')}"]


def test_numbers_swapped_keeps_path_and_hostpath_and_gives_the_next_host_nodes_numbers(make_state, source):
    """Fault ``cdi-node-numbers-swapped``: gpu-3's node keeps /dev/dra-gpu-3 backed by /dev/urandom, with type c
    and the major:minor of gpu-0's /dev/null (1:3), from which the runtime creates the node."""
    source.add(claim(results=[result("gpu-3")]))
    state = make_state(Faults.parse("cdi-node-numbers-swapped"))
    state.prepare(REF)
    null = os.stat("/dev/null").st_rdev
    node = {"path": "/dev/dra-gpu-3", "hostPath": "/dev/urandom", "type": "c"}
    assert _nodes(_spec(state)) == {"uid-1-gpu-3": [{**node, "major": os.major(null), "minor": os.minor(null)}]}
