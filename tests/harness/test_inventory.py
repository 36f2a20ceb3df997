"""Unit tests of conformance.dra.inventory: the one slice -> device flattening (v1 and v1beta1 shapes,
complete pools only), the attribute/capacity pickers suites take as fixtures, and the CEL helpers."""

import pytest

from conformance.core.objects import Obj
from conformance.dra.cel import cel_attribute, cel_attribute_in, cel_capacity, cel_literal
from conformance.dra.inventory import (
    Inventory,
    complete_pools,
    device_fields,
    facts,
)
from conformance.k8s import discovery

DRIVER = "gpu.example.com"


def _slice(node, devices, *, pool=None, generation=1, count=1, name="s"):
    return Obj(
        {
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "devices": devices,
                "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            },
        }
    )


def _dev(name, model, index, memory="8Gi", basic=False):
    body = {
        "attributes": {"model": {"string": model}, "index": {"int": index}, "healthy": {"bool": True}},
        "capacity": {"memory": {"value": memory}},
    }
    return {"name": name, "basic": body} if basic else {"name": name, **body}


def _inventory():
    return Inventory.from_slices(
        DRIVER,
        [
            _slice("n1", [_dev("gpu-0", "a", 0), _dev("gpu-1", "a", 1), _dev("gpu-2", "b", 2, "16Gi")]),
            _slice("n2", [_dev("gpu-0", "a", 0, basic=True), _dev("gpu-1", "b", 1, basic=True)]),
        ],
    )


def test_devices_are_qualified_unwrapped_and_typed():
    inv = _inventory()
    dev = inv.on_node("n2")[0]
    assert dev.attributes == {f"{DRIVER}/model": "a", f"{DRIVER}/index": 0, f"{DRIVER}/healthy": True}
    assert dev.types[f"{DRIVER}/index"] == "int" and dev.capacity == {f"{DRIVER}/memory": "8Gi"}
    assert inv.nodes() == ["n1", "n2"] and inv.names_on("n1") == ["gpu-0", "gpu-1", "gpu-2"]
    assert (inv.per_node_min(), inv.per_node_max()) == (2, 3)


def test_with_binding_conditions_picks_a_device_that_publishes_them():
    bound = {**_dev("gpu-1", "a", 1), "bindingConditions": ["Attached"]}
    inv = Inventory.from_slices(DRIVER, [_slice("n1", [_dev("gpu-0", "a", 0), bound])])
    dev = inv.with_binding_conditions()
    assert (dev.name, dev.binding_conditions) == ("gpu-1", ("Attached",))
    assert inv.selector_for(dev) == f'device.attributes["{DRIVER}"].index == 1'
    with pytest.raises(LookupError, match="bindingConditions"):
        _inventory().with_binding_conditions()


def test_selector_for_on_node_ignores_twins_on_other_nodes():
    """Two nodes publishing the same attributes (dra-driver-cpu on local nodes of one machine): no selector is
    unique cluster-wide, one is on the device's node (its pod pinned there)."""
    twin = [_dev("gpu-0", "a", 0), _dev("gpu-1", "a", 1)]
    inv = Inventory.from_slices(DRIVER, [_slice("n1", twin), _slice("n2", twin, name="s2")])
    dev = inv.of(Obj({"pool": "n2", "device": "gpu-1"}))
    with pytest.raises(LookupError, match="n2/gpu-1"):
        inv.selector_for(dev)
    assert inv.selector_for(dev, on_node=True) == f'device.attributes["{DRIVER}"].index == 1'


def test_of_finds_the_device_an_allocation_result_names():
    result = Obj({"pool": "n1", "device": "gpu-2"})
    assert _inventory().of(result).attributes[f"{DRIVER}/model"] == "b"
    with pytest.raises(KeyError):
        _inventory().of(Obj({"pool": "n1", "device": "gpu-9"}))
    # an unpublished device is a failed check naming it (s15 matrix: a bare KeyError read as a harness crash)
    with pytest.raises(AssertionError, match=r"names device gpu-9 of pool n1, which the driver's complete pools"):
        _inventory().of(Obj({"pool": "n1", "device": "gpu-9"}))


def test_pickers_choose_attributes_that_can_show_the_rule():
    inv = _inventory()
    assert inv.grouping_attribute() == f"{DRIVER}/model"  # shared by some devices of n1, not all
    assert inv.distinct_attribute() == f"{DRIVER}/index"  # different on every device of each node
    assert inv.numeric_attribute() == f"{DRIVER}/index"
    assert inv.splitting_capacity() == ("n1", f"{DRIVER}/memory", "16Gi", ["gpu-2"])  # n1: 8Gi, 8Gi, 16Gi


def test_pickers_raise_lookup_error_when_nothing_fits():
    inv = Inventory.from_slices(DRIVER, [_slice("n1", [{"name": "d0"}, {"name": "d1"}])])
    for pick in (inv.grouping_attribute, inv.distinct_attribute, inv.numeric_attribute, inv.splitting_capacity):
        with pytest.raises(LookupError):
            pick()
    assert inv.sample() == {"d0": {"attributes": {}, "capacity": {}}, "d1": {"attributes": {}, "capacity": {}}}


def test_only_complete_pools_of_the_newest_generation_count():
    old = _slice("n1", [_dev("old", "a", 0)], generation=1, name="s0")
    new_half = _slice("n1", [_dev("new", "a", 0)], generation=2, count=2, name="s1")
    assert complete_pools([old, new_half]) == {}
    other_half = _slice("n1", [_dev("new2", "a", 1)], generation=2, count=2, name="s2")
    assert [s.name for s in complete_pools([old, new_half, other_half])["n1"]] == ["s1", "s2"]
    assert Inventory.from_slices(DRIVER, [old]).names_on("n1") == ["old"]


def test_device_fields_and_facts_read_both_shapes_alike():
    v1, beta = _dev("g", "a", 0), _dev("g", "a", 0, basic=True)
    assert device_fields(v1) == device_fields(beta)
    rows = facts([_slice("n1", [v1]), _slice("n2", [beta])])
    assert [(r["node"], r["device"], r["attributes"]["model"], r["capacity"]["memory"]) for r in rows] == [
        ("n1", "g", "a", "8Gi"),
        ("n2", "g", "a", "8Gi"),
    ]
    assert discovery.devices_of([_slice("n1", [v1])]) == rows[:1]


def test_cel_helpers_quote_and_address():
    assert cel_attribute(f"{DRIVER}/model") == f'device.attributes["{DRIVER}"].model'
    assert cel_capacity(f"{DRIVER}/memory") == f'device.capacity["{DRIVER}"].memory'
    assert cel_literal('a"b\\') == '"a\\"b\\\\"' and cel_literal(3) == "3"
    assert cel_attribute_in(f"{DRIVER}/uuid", ["b", "a"]) == f'device.attributes["{DRIVER}"].uuid in ["b", "a"]'


def test_splitting_capacity_skips_when_every_device_has_the_same_value():
    inv = Inventory.from_slices(DRIVER, [_slice("n1", [_dev("gpu-0", "a", 0), _dev("gpu-1", "a", 1)])])
    with pytest.raises(LookupError, match=r"capacities seen per node: \{'n1/gpu.example.com/memory': \['8Gi'\]\}"):
        inv.splitting_capacity()


def test_cel_literal_writes_cel_booleans():
    assert (cel_literal(True), cel_literal(False)) == ("true", "false")


def _partitioned(node):
    """One GPU with counters memory=8Gi: the whole GPU consumes all of it, two halves consume 4Gi each."""
    whole = {**_dev("gpu-0", "a", 0), "consumesCounters": [{"counterSet": "c0", "counters": {"m": {"value": "8Gi"}}}]}
    whole["attributes"]["partition"] = {"bool": False}
    parts = []
    for i in range(2):
        part = {
            **_dev(f"gpu-0-p{i}", "a", 0, "4Gi"),
            "consumesCounters": [{"counterSet": "c0", "counters": {"m": {"value": "4Gi"}}}],
        }
        part["attributes"]["partition"] = {"bool": True}
        parts.append(part)
    s = _slice(node, [whole, *parts])
    s.raw["spec"]["sharedCounters"] = [{"name": "c0", "counters": {"m": {"value": "8Gi"}}}]
    return s


def test_together_is_every_device_without_shared_counters():
    together = _inventory().together()
    assert together.selector is None and together.names_on("n1") == ["gpu-0", "gpu-1", "gpu-2"]
    assert together.smallest() == 2


def test_together_picks_devices_whose_counters_fit():
    together = Inventory.from_slices(DRIVER, [_partitioned("n1"), _partitioned("n2")]).together()
    assert together.selector == f'device.attributes["{DRIVER}"].partition == true'
    assert together.names_on("n1") == ["gpu-0-p0", "gpu-0-p1"] and together.smallest() == 2


def test_together_raises_when_no_group_fits():
    s = _partitioned("n1")
    s.raw["spec"]["sharedCounters"][0]["counters"]["m"]["value"] = "1Gi"  # nothing fits, not even one half
    with pytest.raises(LookupError, match="counter sets"):
        Inventory.from_slices(DRIVER, [s]).together()


def test_pinned_takes_one_device_that_fits_alone_when_no_group_fits():
    s = _partitioned("n1")
    s.raw["spec"]["sharedCounters"][0]["counters"]["m"]["value"] = "4Gi"  # the halves fit alone, not together
    s.raw["spec"]["devices"][1]["attributes"]["uuid"] = {"string": "u-p0"}
    inv = Inventory.from_slices(DRIVER, [s])
    pinned = inv.pinned()
    assert pinned.selector == f'device.attributes["{DRIVER}"].uuid == "u-p0"' and pinned.names_on("n1") == ["gpu-0-p0"]
    s.raw["spec"]["sharedCounters"][0]["counters"]["m"]["value"] = "1Gi"  # nothing fits at all
    with pytest.raises(LookupError, match="fits its counter sets alone"):
        Inventory.from_slices(DRIVER, [s]).pinned()
