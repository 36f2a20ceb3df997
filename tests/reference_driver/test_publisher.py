"""SlicePublisher against an in-memory stand-in for the ResourceSlice API (unit test only; the e2e test
uses the real API server): create, no churn on re-sync, re-create after deletion with a generation bump,
generation bump on inventory change, faults."""

from __future__ import annotations

import copy
import json
import types

import pytest
from kubernetes.client.rest import ApiException

from reference_driver import DRIVER_NAME, publisher
from reference_driver.faults import Faults
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.simulated import parse_spec

NODE = "node-a"


class FakeSliceApi:
    """In-memory ResourceSlices: resourceVersion per write, conflict on stale replace, server-side
    canonicalisation of quantities (80Gi is stored as 81920Mi to prove the comparison is by value)."""

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.rv = 0
        self.writes = 0

    def _store(self, body):
        self.rv += 1
        self.writes += 1
        obj = json.loads(json.dumps(body).replace('"80Gi"', '"81920Mi"'))
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        self.objects[obj["metadata"]["name"]] = obj

    def list_resource_slice(self, field_selector, **_):
        want = dict(kv.split("=") for kv in field_selector.split(","))
        items = [
            o
            for o in self.objects.values()
            if o["spec"]["nodeName"] == want["spec.nodeName"] and o["spec"]["driver"] == want["spec.driver"]
        ]
        return types.SimpleNamespace(data=json.dumps({"items": copy.deepcopy(items)}))

    def create_resource_slice(self, body, **_):
        if body["metadata"]["name"] in self.objects:
            raise ApiException(status=409, reason="AlreadyExists")
        self._store(body)

    def replace_resource_slice(self, name, body, **_):
        if self.objects[name]["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        self._store(body)

    def delete_resource_slice(self, name, **_):
        self.objects.pop(name)


@pytest.fixture
def make_publisher(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "node-uid-1")
    api = FakeSliceApi()
    spec = {"count": 2}

    def make(faults: Faults = Faults()):
        pub = publisher.SlicePublisher(
            None, NODE, DRIVER_NAME, lambda: SimulatedInventory(parse_spec(spec), NODE).snapshot(), faults
        )
        pub._resource = api
        pub._separate = True
        return pub

    return make, api, spec


def pools(api):
    return sorted(
        (o["spec"]["pool"]["generation"], o["spec"]["pool"]["resourceSliceCount"]) for o in api.objects.values()
    )


def test_publish_then_resync_writes_nothing(make_publisher):
    make, api, _ = make_publisher
    first = make().sync()
    assert first.changed and first.generation == 1 and api.writes == 1
    obj = next(iter(api.objects.values()))
    assert obj["metadata"]["ownerReferences"][0]["uid"] == "node-uid-1"
    again = make().sync()  # a restarted plugin: same slices, no write
    assert not again.changed and again.generation == 1 and api.writes == 1


def test_deleted_slices_are_recreated_with_a_higher_generation(make_publisher):
    make, api, _ = make_publisher
    pub = make()
    pub.sync()
    api.objects.clear()  # what the kubelet does at start-up
    result = pub.sync()
    assert result.changed and pools(api) == [(2, 1)]


def test_inventory_change_bumps_generation_and_splits(make_publisher):
    make, api, spec = make_publisher
    pub = make()
    pub.sync()
    spec["count"] = 200
    result = pub.sync()
    assert result.generation == 2 and pools(api) == [(2, 2), (2, 2)]
    spec["count"] = 1
    pub.sync()
    assert pools(api) == [(3, 1)]


def test_faults_no_slices_wrong_count_wrong_generation(make_publisher):
    make, api, spec = make_publisher
    make(Faults.parse("wrong-slice-count")).sync()
    assert pools(api) == [(1, 2)]
    assert not make(Faults.parse("wrong-slice-count")).sync().changed, "a fault must not cause churn"
    make(Faults.parse("no-slices")).sync()
    assert api.objects == {}
    pub = make(Faults.parse("wrong-pool-generation"))
    pub.sync()
    spec["count"] = 3
    pub.sync()
    assert pools(api) == [(1, 1)]


def _devices(api):
    return [d for o in sorted(api.objects.values(), key=lambda o: o["metadata"]["name"]) for d in o["spec"]["devices"]]


def test_fault_slices_no_owner(make_publisher):
    make, api, _ = make_publisher
    make().sync()
    assert [o["metadata"]["ownerReferences"][0]["kind"] for o in api.objects.values()] == ["Node"]
    pub = make(Faults.parse("slices-no-owner"))
    assert pub.sync().changed, "turning the fault on rewrites the owned slice"
    assert [o["metadata"]["ownerReferences"] for o in api.objects.values()] == [[]]
    assert not pub.sync().changed, "a fault must not cause churn"


def test_fault_attribute_missing(make_publisher):
    make, api, _ = make_publisher
    make(Faults.parse("attribute-missing")).sync()
    devices = _devices(api)
    assert len(devices) == 2 and all("model" not in d["attributes"] for d in devices)
    assert all(d["attributes"]["productName"] == {"string": "DRA Conformance GPU 80GB"} for d in devices)


def test_fault_attribute_wrong_type(make_publisher):
    make, api, _ = make_publisher
    pub = make(Faults.parse("attribute-wrong-type"))
    pub.sync()
    assert [d["attributes"]["index"] for d in _devices(api)] == [{"string": "0"}, {"string": "1"}]
    assert all(d["attributes"]["model"] == {"string": "DRA Conformance GPU 80GB"} for d in _devices(api))
    assert not pub.sync().changed, "a fault must not cause churn"


def test_fault_oversized_slice(make_publisher):
    make, api, spec = make_publisher
    spec["count"] = 130
    make().sync()
    assert sorted(len(o["spec"]["devices"]) for o in api.objects.values()) == [2, 128]
    api.objects.clear()
    make(Faults.parse("oversized-slice")).sync()
    assert [len(o["spec"]["devices"]) for o in api.objects.values()] == [130]
    assert pools(api) == [(1, 1)]


@pytest.mark.parametrize("faults, bumped", [("", True), ("wrong-pool-generation", False)])
def test_one_deleted_slice_of_a_two_slice_pool(make_publisher, faults, bumped):
    """What suites/node/test_slice_publishing.py::test_pool_republished_across_slices_moves_to_a_higher_generation
    sees: a healthy driver republishes a two-slice pool at a higher generation, the fault at the same one."""
    make, api, spec = make_publisher
    spec["count"] = 130
    pub = make(Faults.parse(faults))
    before = pub.sync().generation
    api.objects.pop(sorted(api.objects)[-1])  # delete one slice, as a test (or the kubelet) does
    pub.sync()
    generations = {o["spec"]["pool"]["generation"] for o in api.objects.values()}
    assert len(api.objects) == 2 and generations == ({before + 1} if bumped else {before})


def test_faults_counters_understated_and_capacity_overstated_change_what_is_published(make_publisher):
    """The published slices carry the faulted counters / capacity; the driver's own inventory is unchanged."""
    make, api, spec = make_publisher
    spec.update({"count": 1, "partitions": 4, "partitionProfiles": [1, 3]})
    make(Faults.parse("counters-understated")).sync()
    devices = [d for o in api.objects.values() for d in o["spec"].get("devices", [])]
    big = next(d for d in devices if d["name"] == "gpu-0-3g-0")
    assert sorted(big["consumesCounters"][0]["counters"]) == ["memory", "slice0"]
    spec.clear()
    spec.update({"count": 1, "allowMultipleAllocations": True})
    make(Faults.parse("capacity-overstated")).sync()
    assert [d["capacity"]["memory"]["value"] for d in _devices(api)] == ["160Gi"]
