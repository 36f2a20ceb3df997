"""MIG-like partitions and consumable capacity in the reference driver: what prepared devices physically hold
(reference_driver/sharing.py), prepare refusing what the hardware could not do, and the faults
counters-understated, partition-not-freed, share-ignored, capacity-overstated, partition-cdi-parent."""

from __future__ import annotations

import json

import pytest

from reference_driver import DRIVER_NAME, sharing, slices
from reference_driver.cdi import CdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import FAULTS, Faults
from reference_driver.inventory import InventoryError, SimulatedInventory
from reference_driver.inventory.simulated import parse_spec
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import NODE, claim, result

PARTITIONS = {"count": 1, "partitions": 4, "partitionProfiles": [1, 3]}
SHARED = {"count": 1, "allowMultipleAllocations": True, "capacityRequestPolicy": {"default": "1Gi", "min": "1Gi"}}


def snap(raw):
    return SimulatedInventory(parse_spec(raw), NODE).snapshot()


@pytest.fixture
def state_of(tmp_path, source):
    """Factory: DeviceState over the simulated inventory ``raw`` with ``faults``."""

    def make(raw, faults=""):
        inventory = SimulatedInventory(parse_spec(raw), NODE)
        store, checkpoint = CdiStore(tmp_path / "cdi"), Checkpoint(tmp_path / "checkpoint.json")
        return DeviceState(DRIVER_NAME, {NODE}, inventory.snapshot, source, store, checkpoint, Faults.parse(faults))

    return make


def _prepare(state, source, uid, *results):
    source.add(claim(uid=uid, name=uid, results=list(results)))
    return state.prepare(ClaimRef("ns", uid, uid))


def test_mig_like_profiles_publish_per_slice_counters_and_own_uuids():
    """Whole GPU (all slices), 1g partitions at each slice, 3g at slices 0-2; partitions carry parentUUID."""
    s = snap(PARTITIONS)
    assert [d.name for d in s.devices] == [
        "gpu-0",
        "gpu-0-part-0",
        "gpu-0-part-1",
        "gpu-0-part-2",
        "gpu-0-part-3",
        "gpu-0-3g-0",
    ]
    assert s.counter_sets[0].counters == {"memory": "80Gi", "slice0": "1", "slice1": "1", "slice2": "1", "slice3": "1"}
    big = s.device("gpu-0-3g-0").to_api()["consumesCounters"][0]["counters"]
    assert big == {"memory": {"value": "60Gi"}, **{f"slice{j}": {"value": "1"} for j in range(3)}}
    uuids = {d.attribute("uuid") for d in s.devices}
    assert len(uuids) == 6 and s.device("gpu-0-part-1").attribute("parentUUID") == s.device("gpu-0").attribute("uuid")
    assert len(slices.plan(s, NODE, DRIVER_NAME, separate_counters=False)) == 1


@pytest.mark.parametrize("profiles", [[5], [], [1, 1], "1", [True]])
def test_partition_profiles_errors_name_the_key(profiles):
    with pytest.raises(InventoryError, match="partitionProfiles"):
        parse_spec({"partitions": 4, "partitionProfiles": profiles})


def test_overlapping_partitions_are_refused_at_prepare_and_freed_by_unprepare(state_of, source):
    """The hardware refuses a partition on slices another prepared claim holds; unprepare frees them."""
    state = state_of(PARTITIONS)
    _prepare(state, source, "a", result("gpu-0-3g-0"))
    with pytest.raises(ClaimError, match=r"gpu-0/slice1: needs 1, 1 of 1 already held by ns/a"):
        _prepare(state, source, "b", result("gpu-0-part-1"))
    assert [d.device for d in _prepare(state, source, "c", result("gpu-0-part-3"))] == ["gpu-0-part-3"]
    state.unprepare("a")
    assert [d.device for d in _prepare(state, source, "b", result("gpu-0-part-1"))] == ["gpu-0-part-1"]


def test_fault_partition_not_freed_keeps_slices_after_unprepare(state_of, source):
    state = state_of(PARTITIONS, "partition-not-freed")
    _prepare(state, source, "a", result("gpu-0"))
    state.unprepare("a")
    with pytest.raises(ClaimError, match="held by unprepared ns/a"):
        _prepare(state, source, "b", result("gpu-0-part-0"))
    assert "partition-not-freed" in FAULTS


def test_fault_counters_understated_publishes_only_the_first_slice():
    """The 3g partition publishes slice0 only (memory stays), the device itself still occupies three slices."""
    real = snap(PARTITIONS)
    published = sharing.as_published(real, understate_counters=True)
    counters = published.device("gpu-0-3g-0").to_api()["consumesCounters"][0]["counters"]
    assert counters == {"memory": {"value": "60Gi"}, "slice0": {"value": "1"}}
    assert published.device("gpu-0-part-1") == real.device("gpu-0-part-1")
    assert published.device("gpu-0-3g-0").occupies == real.device("gpu-0-3g-0").occupies
    assert sharing.as_published(real) is real


def test_shares_fit_within_capacity_and_an_over_share_is_refused(state_of, source):
    state = state_of(SHARED)
    share = {"shareID": "11111111-aaaa", "consumedCapacity": {"memory": "60Gi"}}
    _prepare(state, source, "a", result("gpu-0", **share))
    _prepare(state, source, "b", result("gpu-0", shareID="22222222-bbbb", consumedCapacity={"memory": "20Gi"}))
    with pytest.raises(ClaimError, match="gpu-0/memory: needs 1073741824"):
        _prepare(state, source, "c", result("gpu-0", shareID="33333333-cccc", consumedCapacity={"memory": "1Gi"}))


def test_fault_share_ignored_refuses_a_second_share(state_of, source):
    state = state_of(SHARED, "share-ignored")
    _prepare(state, source, "a", result("gpu-0", shareID="1111", consumedCapacity={"memory": "1Gi"}))
    with pytest.raises(ClaimError, match="gpu-0/exclusive"):
        _prepare(state, source, "b", result("gpu-0", shareID="2222", consumedCapacity={"memory": "1Gi"}))


def test_fault_capacity_overstated_publishes_twice_the_real_capacity(state_of, source):
    real = snap(SHARED)
    published = sharing.as_published(real, overstate_capacity=True).device("gpu-0").to_api()["capacity"]["memory"]
    assert published["value"] == "160Gi" and published["requestPolicy"]["default"] == "1Gi"
    state = state_of(SHARED, "capacity-overstated")
    with pytest.raises(ClaimError, match="gpu-0/memory"):
        _prepare(state, source, "a", result("gpu-0", shareID="1111", consumedCapacity={"memory": "160Gi"}))


def test_fault_partition_cdi_parent_injects_the_parent_gpu(state_of, source, tmp_path):
    state = state_of(PARTITIONS, "partition-cdi-parent")
    _prepare(state, source, "a", result("gpu-0-part-2"))
    spec = json.loads(state.store.path("a").read_text())
    env = [e for d in spec["devices"] for e in d["containerEdits"]["env"] if e.startswith("DRA_GPU_DEVICE_")]
    assert env == ["DRA_GPU_DEVICE_GPU_0=gpu-0"]
    healthy = state_of(PARTITIONS)
    healthy.unprepare("a")
    _prepare(healthy, source, "b", result("gpu-0-part-2"))
    spec = json.loads(healthy.store.path("b").read_text())
    assert "DRA_GPU_DEVICE_GPU_0_PART_2=gpu-0-part-2" in spec["devices"][0]["containerEdits"]["env"]
