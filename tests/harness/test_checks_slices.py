"""Unit tests of conformance.dra.checks.slices: a well-formed pool passes every rule, and each rule fails on a
hand-built slice that breaks it (and only that rule)."""

import copy

import pytest

from conformance.core.objects import Obj
from conformance.dra.checks.base import describe
from conformance.dra.checks.slices import check_slices, node_owner_uids

DRIVER = "gpu.example.com"
ATTRS = {"model": "string", "index": "int", "driverVersion": "version", f"{DRIVER}/healthy": "bool"}


def _dev(name, index=0):
    return {
        "name": name,
        "attributes": {
            "model": {"string": "m"},
            "index": {"int": index},
            "driverVersion": {"version": "1.0.0"},
            f"{DRIVER}/healthy": {"bool": True},
        },
        "capacity": {"memory": {"value": "8Gi"}},
    }


def _slice(name="n1-0", node="n1", devices=None, *, generation=1, count=1, pool=None):
    return {
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": f"uid-{node}"}],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            "devices": [_dev("gpu-0", 0), _dev("gpu-1", 1)] if devices is None else devices,
        },
    }


def _rules(*raw):
    return sorted({v.rule for v in check_slices([Obj(r) for r in raw], DRIVER, ATTRS)})


def test_good_pools_pass_every_rule():
    two = [_slice("n2-0", "n2", [_dev("gpu-0")], count=2), _slice("n2-1", "n2", [_dev("gpu-1", 1)], count=2)]
    slices = [Obj(r) for r in [_slice(), *two]]
    assert check_slices(slices, DRIVER, ATTRS) == [], describe(check_slices(slices, DRIVER, ATTRS))
    assert node_owner_uids(slices, {"n1": "uid-n1", "n2": "uid-n2"}) == []


def test_slices_of_another_driver_are_ignored():
    other = _slice()
    other["spec"]["driver"] = "other.example.com"
    other["spec"]["allNodes"] = True
    assert _rules(_slice(), other) == []


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["spec"].update(allNodes=True),
        lambda s: s["spec"].pop("nodeName") and s["metadata"].pop("ownerReferences"),
    ],
    ids=["two-set", "none-set"],
)
def test_node_scope_requires_exactly_one(edit):
    bad = _slice()
    edit(bad)
    assert _rules(bad) == ["slice.node-scope"]


def test_node_local_slice_without_node_owner_fails():
    bad = _slice()
    bad["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "n1"}]
    assert _rules(bad) == ["slice.node-owner"]
    del bad["metadata"]["ownerReferences"]
    assert _rules(bad) == ["slice.node-owner"]
    other_node = _slice()
    other_node["metadata"]["ownerReferences"][0]["name"] = "n2"
    assert _rules(other_node) == ["slice.node-owner"]


def test_owner_with_stale_node_uid_fails():
    violations = node_owner_uids([Obj(_slice())], {"n1": "uid-new"})
    assert [v.rule for v in violations] == ["slice.node-owner-uid"] and "uid-new" in violations[0].message


def test_pool_with_two_generations_fails():
    old = _slice("n1-old", generation=1)
    new = _slice("n1-new", devices=[_dev("gpu-2")], generation=2)
    assert _rules(old, new) == ["slice.pool-generation"]


@pytest.mark.parametrize("count", [2, 0])
def test_slice_count_not_matching_the_slices_fails(count):
    assert _rules(_slice(count=count)) == ["slice.pool-count"]


def test_slice_counts_that_disagree_fail():
    a, b = _slice("n1-0", devices=[_dev("gpu-0")], count=2), _slice("n1-1", devices=[_dev("gpu-1")], count=3)
    assert _rules(a, b) == ["slice.pool-count"]


def test_duplicate_device_in_a_pool_fails():
    a, b = _slice("n1-0", devices=[_dev("gpu-0")], count=2), _slice("n1-1", devices=[_dev("gpu-0")], count=2)
    assert _rules(a, b) == ["slice.duplicate-device"]
    assert _rules(_slice(devices=[_dev("gpu-0"), _dev("gpu-0")])) == ["slice.duplicate-device"]
    other_pool = _slice("n2-0", "n2", devices=[_dev("gpu-0")])
    assert _rules(_slice("n1-0", devices=[_dev("gpu-0")]), other_pool) == []


def test_oversized_slice_fails():
    assert _rules(_slice(devices=[_dev(f"gpu-{i}", i) for i in range(128)])) == []
    assert _rules(_slice(devices=[_dev(f"gpu-{i}", i) for i in range(129)])) == ["slice.max-devices"]


def test_slice_with_counters_has_the_lower_limit():
    devices = [_dev(f"gpu-{i}", i) for i in range(65)]
    devices[0]["consumesCounters"] = [{"counterSet": "cs", "counters": {"mem": {"value": "1Gi"}}}]
    assert _rules(_slice(devices=devices)) == ["slice.max-devices"]
    assert _rules(_slice(devices=devices[:64])) == []


def test_device_with_too_many_attributes_fails():
    dev = _dev("gpu-0")
    dev["attributes"].update({f"extra{i}": {"int": i} for i in range(28)})
    assert _rules(_slice(devices=[dev])) == ["slice.max-device-fields"]
    dev["attributes"].pop("extra0")
    assert _rules(_slice(devices=[dev])) == []


def test_missing_declared_attribute_fails():
    devices = [_dev("gpu-0"), _dev("gpu-1", 1)]
    for d in devices:
        del d["attributes"]["model"]
    violations = check_slices([Obj(_slice(devices=devices))], DRIVER, ATTRS)
    assert [v.rule for v in violations] == ["slice.attribute-missing"] and f"{DRIVER}/model" in violations[0].message


def test_declared_attribute_on_some_devices_passes():
    devices = [_dev("gpu-0"), _dev("gpu-1", 1)]
    del devices[1]["attributes"]["model"]
    assert _rules(_slice(devices=devices)) == []


def test_empty_pool_is_not_missing_attributes():
    assert _rules(_slice(devices=[])) == []


def test_attribute_of_the_wrong_type_fails():
    dev = _dev("gpu-0")
    dev["attributes"]["index"] = {"string": "0"}
    violations = check_slices([Obj(_slice(devices=[dev]))], DRIVER, ATTRS)
    assert [v.rule for v in violations] == ["slice.attribute-type"]
    assert "string" in violations[0].message and "int" in violations[0].message


def test_qualified_published_name_matches_unqualified_declaration():
    dev = copy.deepcopy(_dev("gpu-0"))
    dev["attributes"][f"{DRIVER}/index"] = dev["attributes"].pop("index")
    dev["attributes"][f"{DRIVER}/index"] = {"bool": True}
    assert _rules(_slice(devices=[dev])) == ["slice.attribute-type"]


def test_v1beta1_devices_are_read_through_basic():
    dev = _dev("gpu-0")
    beta = {"name": "gpu-0", "basic": {k: v for k, v in dev.items() if k != "name"}}
    beta["basic"]["attributes"]["index"] = {"string": "0"}
    assert _rules(_slice(devices=[beta])) == ["slice.attribute-type"]


class _SliceLister:
    """A K8s stand-in whose ``list`` answers ResourceSlices from a script of listings (last one repeats)."""

    def __init__(self, *listings):
        self.listings = [[Obj(r) for r in listing] for listing in listings]

    def list(self, kind, **_):
        return self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]


def test_pool_republished_waits_for_the_pool_without_the_deleted_slice(monkeypatch):
    from conformance.core import errors
    from conformance.dra.inventory import pool_devices
    from conformance.k8s.waits import slices as slice_waits

    monkeypatch.setattr(slice_waits, "SLICES_POLL_S", 0.01)
    before = _slice()
    devices = pool_devices([Obj(before)])
    again = copy.deepcopy(before)
    again["metadata"]["uid"] = "uid-new"
    k8s = _SliceLister([before], [], [again])
    got = slice_waits.pool_republished(k8s, DRIVER, "n1", devices=devices, removed=["uid-n1-0"], timeout=5)
    assert [s.uid for s in got] == ["uid-new"]
    with pytest.raises(errors.WaitTimeout, match="uid-n1-0"):
        slice_waits.pool_republished(
            _SliceLister([before]), DRIVER, "n1", devices=devices, removed=["uid-n1-0"], timeout=0.05
        )
    fewer = copy.deepcopy(again)
    fewer["spec"]["devices"] = fewer["spec"]["devices"][:1]
    with pytest.raises(errors.WaitTimeout, match="gpu-0"):
        slice_waits.pool_republished(
            _SliceLister([fewer]), DRIVER, "n1", devices=devices, removed=["uid-n1-0"], timeout=0.05
        )
