"""Unit tests: an unsatisfiable count the allocator rules out in a few steps (shares.too_many, PL-01's
"too-many" subrequest), and the scheduler verdicts ALLOC-25's count above a node accepts (its DRA filter
timeout or "cannot allocate all claims": waits.pod_unschedulable_with with a tuple of alternatives)."""

from conformance.core.objects import Obj
from conformance.dra import shares
from conformance.dra.inventory import Inventory
from conformance.k8s.waits import pods
from reference_driver import DRIVER_NAME, slices
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.simulated import parse_spec
from reference_driver.sharing import as_published


def _inventory(*raws) -> Inventory:
    out = []
    for n, raw in enumerate(raws):
        node = f"node-{n}"
        snap = as_published(SimulatedInventory(parse_spec(raw), node).snapshot())
        planned = slices.plan(snap, node, DRIVER_NAME, separate_counters=True)
        out += [Obj(s) for s in slices.render(planned, node, f"uid-{node}", DRIVER_NAME, 1)]
    return Inventory.from_slices(DRIVER_NAME, out)


def _attr(inventory: Inventory) -> str:
    name = inventory.distinct_attribute()
    assert name == f"{DRIVER_NAME}/hostDeviceNode", name
    return f'device.attributes["{DRIVER_NAME}"].hostDeviceNode'


def test_too_many_keeps_to_two_devices_per_node_and_asks_three():
    """8 GPUs per node: the first two values of each node of a per-device attribute (the same two on both
    nodes: hostDeviceNode, the first such attribute by name), count 3, not 9 of 8."""
    inventory = _inventory({"count": 8}, {"count": 8})
    got = shares.too_many(inventory, shares.allocated_once(inventory))
    assert got == shares.TooMany((f'{_attr(inventory)} in ["null", "zero"]',), 3), got


def test_too_many_counts_the_most_any_node_matches():
    """A node of 1 device gives one value; the other node has two matching devices: count 3."""
    inventory = _inventory({"count": 1}, {"count": 4})
    got = shares.too_many(inventory, shares.allocated_once(inventory))
    assert got.count == 3 and got.selectors == (f'{_attr(inventory)} in ["null", "zero"]',), got


def test_too_many_stays_within_the_devices_allocated_once():
    shared = {"count": 2, "allowMultipleAllocations": True, "capacityRequestPolicy": {"default": "1Gi", "min": "1Gi"}}
    inventory = _inventory(shared, {"count": 8})
    once = shares.allocated_once(inventory)
    got = shares.too_many(inventory, once)
    assert got.selectors[0] == once.selector == shares.ALLOCATED_ONCE and got.count == 3, got


def test_too_many_without_a_per_device_attribute_is_the_whole_node(monkeypatch):
    inventory = _inventory({"count": 8}, {"count": 8})

    def none():
        raise LookupError("no attribute has distinct values per node")

    monkeypatch.setattr(inventory, "distinct_attribute", none)
    assert shares.too_many(inventory, shares.allocated_once(inventory)) == shares.TooMany((), 9)


def _pod(message: str) -> Obj:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    return Obj({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "status": {"conditions": [condition]}})


def test_a_tuple_of_texts_is_any_one_of_them(monkeypatch):
    seen = {}
    monkeypatch.setattr(pods, "until", lambda *a, **kw: seen.update(kw))
    either = ("cannot allocate all claims", "timed out trying to allocate devices")
    pods.pod_unschedulable_with(None, _pod(""), either, timeout=1)
    done = seen["done"]
    assert done(_pod("0/2 nodes are available: 2 timed out trying to allocate devices."))
    assert done(_pod("0/2 nodes are available: 2 cannot allocate all claims."))
    assert not done(_pod("0/2 nodes are available: 2 Insufficient cpu."))
    pods.pod_unschedulable_with(None, _pod(""), "cannot allocate all claims", timeout=1)
    assert not seen["done"](_pod("0/2 nodes are available: 2 timed out trying to allocate devices."))
