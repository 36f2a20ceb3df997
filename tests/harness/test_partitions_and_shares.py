"""Unit tests of the partition and shared-capacity pickers (conformance/dra/partitions.py, shares.py) over
the slices the reference driver renders for its MIG-like and multi-allocatable inventories, and of
Inventory.selector_for."""

import pytest

from conformance.core.objects import Obj
from conformance.dra import partitions, shares
from conformance.dra.inventory import Inventory
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
    assert (whole.name, part.name) == ("gpu-0", "gpu-0-part-3") and partitions.partition(inv) == part
    selector = inv.selector_for(part)
    assert selector.startswith(f'device.attributes["{DRIVER_NAME}"].uuid == "GPU-'), selector


def _one_gpu(devices: list[tuple[str, list[str]]], offered: list[str]) -> Inventory:
    """One node's slice with one counter set ``gpu-0-counters`` of ``offered`` counters (value 1 each) and
    ``devices`` ``[(name, counters consumed)]``, as a driver outside this repo might publish it."""
    body = [
        {
            "name": name,
            "attributes": {"index": {"int": i}, "uuid": {"string": f"u-{name}"}},
            "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {c: {"value": "1"} for c in uses}}],
        }
        for i, (name, uses) in enumerate(devices)
    ]
    spec = {
        "driver": DRIVER_NAME,
        "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "sharedCounters": [{"name": "gpu-0-counters", "counters": {c: {"value": "1"} for c in offered}}],
        "devices": body,
    }
    obj = Obj({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": spec})
    return Inventory.from_slices(DRIVER_NAME, [obj])


MEM = [f"mem-{k}" for k in range(4)]
MIG_ONLY = [("gpu-0-3g-0", MEM[:3])] + [(f"gpu-0-1g-{k}", [MEM[k]]) for k in range(4)]  # no whole-GPU device
SLOTS = ["slot-3g", *(f"slot-1g-{k}" for k in range(4))]  # defect: 3g and 1g-0 share silicon, no counter
NEVER_COLLIDE = [("gpu-0", SLOTS), ("gpu-0-3g-0", SLOTS[:1])] + [(f"gpu-0-1g-{k}", [SLOTS[k + 1]]) for k in range(4)]


def test_mig_only_inventory_runs_every_partition_test():
    """Review 5 finding 2: only partitions published (a 3g on slices 0-2, four 1g): the over-allocation
    test packs 3g + 1g-3 and names 1g-0 as the extra; the 3g is the "whole" the 1g-0 never fits next to; the
    exactly-its-partition test gets the smallest partition."""
    inv = _one_gpu(MIG_ONLY, MEM)
    pack = partitions.packing(inv)
    assert [d.name for d in pack.fit] == ["gpu-0-3g-0", "gpu-0-1g-3"] and pack.extra.name == "gpu-0-1g-0"
    assert [d.name for d in partitions.whole_and_partition(inv)] == ["gpu-0-3g-0", "gpu-0-1g-2"]
    assert partitions.partition(inv).name == "gpu-0-1g-3"


def test_partitions_that_never_collide_all_run_and_the_whole_device_is_the_extra():
    """Review 5 finding 3: each partition draws on its own slot counter, so per the published counters all
    five fit together (no leftover partition); the packing keeps them all (a driver whose hardware cannot hold
    3g + 1g-0 fails to run them) and the whole GPU, which fits alone but not next to them, is the extra."""
    inv = _one_gpu(NEVER_COLLIDE, SLOTS)
    pack = partitions.packing(inv)
    assert {d.name for d in pack.fit} == {n for n, _ in NEVER_COLLIDE[1:]} and pack.extra.name == "gpu-0"
    assert [d.name for d in partitions.whole_and_partition(inv)] == ["gpu-0", "gpu-0-1g-3"]


def test_partitions_that_all_fit_without_a_whole_device_leave_no_extra():
    """No whole device and no overlap: every partition runs together, nothing is left to refuse."""
    inv = _one_gpu(NEVER_COLLIDE[1:], SLOTS)
    pack = partitions.packing(inv)
    assert len(pack.fit) == 5 and pack.extra is None
    with pytest.raises(LookupError, match="fit alone but not together"):
        partitions.whole_and_partition(inv)
    assert partitions.partition(inv).name in {n for n, _ in NEVER_COLLIDE[1:]}


def test_a_counter_set_with_one_device_is_not_shared():
    inv = _one_gpu([("gpu-0", MEM)], MEM)
    for pick in (partitions.packing, partitions.partition, partitions.whole_and_partition):
        with pytest.raises(LookupError, match="counter set"):
            pick(inv)


def test_pickers_raise_lookup_error_without_counters():
    inv = Inventory.from_slices(DRIVER_NAME, _slices({"count": 2}))
    with pytest.raises(LookupError, match="counter sets"):
        partitions.packing(inv)
    with pytest.raises(LookupError, match="counter set"):
        partitions.whole_and_partition(inv)
    with pytest.raises(LookupError, match="counter sets"):
        partitions.partition(inv)
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


def test_taint_target_on_partitions_takes_its_others_among_devices_that_fit_together():
    """Found by the full profile on partitions + taints + health (issue 24 §3): TAINT-01 claimed every other
    untainted device of the node, whole GPUs and their partitions at once, which never fits the counter sets,
    and its pod stayed Pending. The target and its others now come from Inventory.together (here the whole
    GPUs), with that group's selector for the claim; without counters nothing changes."""
    from conformance.dra import counters, device_taints  # noqa: PLC0415

    inv = Inventory.from_slices(DRIVER_NAME, _slices(MIG))
    t = device_taints.untainted(inv, f"{DRIVER_NAME}/uuid")
    group = [d for d in inv.on_node(t.node) if d.name in (t.name, *t.others)]
    assert t.group.endswith("partition == false") and [d.name for d in group] == ["gpu-0", "gpu-1"], t
    assert counters.fit(group, inv.counter_sets), [d.name for d in group]
    plain = device_taints.untainted(Inventory.from_slices(DRIVER_NAME, _slices({"count": 3})), f"{DRIVER_NAME}/uuid")
    assert plain.group is None and len(plain.others) == 2, plain


def test_multi_allocatable_devices_are_marked_so_unique_values_per_result_are_not_assumed():
    """Found by the full profile on consumable capacity + admin access (issue 24 §3): with allowMultipleAllocations
    a count-2 request got one device twice (two shares), so matchAttribute on a per-device unique attribute held
    and ALLOC-25's 'unsatisfiable' did not. Inventory devices carry ``multiple``; the unique_per_result fixture
    keeps the claim off them (see below), and ADM-03 counts results by (driver, pool, device, shareID)."""
    from conformance.dra.claimstatus import entry_key  # noqa: PLC0415

    shared = Inventory.from_slices(DRIVER_NAME, _slices(SHARED))
    assert shared.devices and all(d.multiple for d in shared.devices)
    assert not any(d.multiple for d in Inventory.from_slices(DRIVER_NAME, _slices({"count": 2})).devices)
    two_shares = [{"driver": "d", "pool": "p", "device": "gpu-0", "shareID": s} for s in ("a", "b")]
    assert len({entry_key(r) for r in two_shares}) == 2
    assert len({entry_key({**r, "shareID": None}) for r in two_shares}) == 1


def test_allocated_once_keeps_claims_to_the_devices_without_multiple_allocations():
    """Breaker s12 F8: ALLOC-25 skipped for the whole driver when any device allowed multiple allocations, and
    the count-above-any-node test asked for a count that shares can satisfy. Their claims now carry the CEL
    selector for devices allocated once, with that per-node count; none when no device allows it; a gap
    (LookupError, a fixture skip with evidence) only when no node has enough such devices."""

    def on(node, raw):
        return [s for s in _slices(raw) if s.get("spec.nodeName") == node]

    mixed = shares.allocated_once(Inventory.from_slices(DRIVER_NAME, on("node-1", SHARED) + on("node-2", {"count": 3})))
    assert mixed == shares.AllocatedOnce("!device.allowMultipleAllocations", 3), mixed
    assert shares.allocated_once(Inventory.from_slices(DRIVER_NAME, _slices({"count": 2}))) == shares.AllocatedOnce(
        "", 2
    )
    with pytest.raises(LookupError, match=r"no node has 1 device\(s\) without allowMultipleAllocations"):
        shares.allocated_once(Inventory.from_slices(DRIVER_NAME, _slices(SHARED)))
