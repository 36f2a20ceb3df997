"""Unit tests of the partition and shared-capacity pickers (conformance/k8s/partitions.py, shares.py) over
the slices the reference driver renders for its MIG-like and multi-allocatable inventories, and of
Inventory.selector_for."""

import pytest

from conformance.k8s import partitions, shares
from conformance.k8s.inventory import Inventory
from conformance.k8s.objects import Obj
from reference_driver import DRIVER_NAME, slices
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.simulated import parse_spec
from reference_driver.sharing import as_published


def _slices(raw, separate=True, **faults):
    out = []
    for node in ("node-1", "node-2"):
        snap = as_published(SimulatedInventory(parse_spec(raw), node).snapshot(), **faults)
        planned = slices.plan(snap, node, DRIVER_NAME, separate_counters=separate)
        out += [Obj(s) for s in slices.render(planned, node, f"uid-{node}", DRIVER_NAME, 1)]
    return out


MIG = {"count": 2, "partitions": 4, "partitionProfiles": [1, 3]}
SHARED = {"count": 2, "allowMultipleAllocations": True, "capacityRequestPolicy": {"default": "1Gi", "min": "1Gi"}}


@pytest.mark.parametrize("separate", [True, False])
def test_packing_fills_a_counter_set_and_names_the_partition_that_would_over_allocate(separate):
    inv = Inventory.from_slices(DRIVER_NAME, _slices(MIG, separate))
    pack = partitions.packing(inv)
    assert (pack.node, pack.counter_set) == ("node-1", ("node-1", "gpu-0-counters"))
    assert [d.name for d in pack.fit] == ["gpu-0-3g-0", "gpu-0-part-3"] and pack.extra.name == "gpu-0-part-0"


def test_packing_with_understated_counters_packs_overlapping_partitions():
    """What the fault counters-understated makes the suite do: 3g (published on slice0 only) next to 1g on
    slice1, which the hardware cannot give."""
    inv = Inventory.from_slices(DRIVER_NAME, _slices(MIG, understate_counters=True))
    assert [d.name for d in partitions.packing(inv).fit] == ["gpu-0-3g-0", "gpu-0-part-1"]


def test_whole_and_partition_and_selectors_pick_exactly_one_device():
    inv = Inventory.from_slices(DRIVER_NAME, _slices(MIG))
    whole, part = partitions.whole_and_partition(inv)
    assert (whole.name, part.name) == ("gpu-0", "gpu-0-part-3")
    selector = inv.selector_for(part)
    assert selector.startswith(f'device.attributes["{DRIVER_NAME}"].uuid == "GPU-'), selector


def test_pickers_raise_lookup_error_without_counters():
    inv = Inventory.from_slices(DRIVER_NAME, _slices({"count": 2}))
    with pytest.raises(LookupError, match="counter sets"):
        partitions.packing(inv)
    with pytest.raises(LookupError, match="counter set"):
        partitions.whole_and_partition(inv)
    with pytest.raises(LookupError, match="allowMultipleAllocations"):
        shares.shared_device(DRIVER_NAME, _slices({"count": 2}), inv)


def test_shared_device_amounts_follow_the_request_policy():
    objs = _slices(SHARED)
    dev = shares.shared_device(DRIVER_NAME, objs, Inventory.from_slices(DRIVER_NAME, objs))
    assert (dev.node, dev.name, dev.key, dev.value) == ("node-1", "gpu-0", "memory", "80Gi")
    assert (dev.small, dev.large) == (str(2**30), str(80 * 2**30))
    assert dev.fits(dev.small, dev.small) and not dev.fits(dev.large, dev.small)


@pytest.mark.parametrize(
    "policy, small, large",
    [
        (None, 20, 80),
        ({"default": "2Gi"}, 2, 2),
        ({"default": "2Gi", "validValues": ["2Gi", "30Gi", "90Gi"]}, 2, 30),
        ({"default": "1Gi", "validRange": {"min": "3Gi", "max": "70Gi", "step": "2Gi"}}, 3, 69),
    ],
)
def test_amounts(policy, small, large):
    got = shares.amounts("80Gi", policy)
    assert got == (small * 2**30, large * 2**30)
