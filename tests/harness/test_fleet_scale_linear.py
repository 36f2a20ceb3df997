"""Nothing in the harness is quadratic in nodes or slices (issue 26 §4, found with ``make harness-scale``'s
cProfile): per-node device lookups use an index built once, the slice pool rules and the capability
evaluation make one pass over the slices or devices. Each test counts the work on a 2,000-node fleet, so a
scan per node or per pool (2,000 x 2,000) fails it."""

from __future__ import annotations

from conformance.core import slice_features
from conformance.core.objects import Obj
from conformance.dra.checks.slices import pool_consistency
from conformance.dra.inventory import Inventory

DRIVER = "gpu.example.com"
NODES = 2000


class CountingObj(Obj):
    """An Obj that counts its ``get`` calls (shared counter in ``calls``)."""

    calls = [0]

    def get(self, path, default=None):
        self.calls[0] += 1
        return super().get(path, default)


def _slice(node: str, generation: int = 1) -> dict:
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(8)]
    pool = {"name": node, "generation": generation, "resourceSliceCount": 1}
    spec = {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices}
    return {"metadata": {"name": f"{node}-s"}, "spec": spec}


class CountingList(list):
    """A list that counts how often it is iterated."""

    iterations = 0

    def __iter__(self):
        CountingList.iterations += 1
        return super().__iter__()


def test_pool_rules_read_each_slice_a_bounded_number_of_times():
    slices = [CountingObj(_slice(f"n-{i}")) for i in range(NODES)] + [CountingObj(_slice("n-0", generation=0))]
    CountingObj.calls[0] = 0
    found = pool_consistency(slices)
    assert [v.rule for v in found] == ["slice.pool-generation"], found  # the one stale slice, still found
    assert CountingObj.calls[0] < 10 * len(slices), CountingObj.calls[0]  # a scan per pool: ~4,000,000


def test_devices_per_node_are_looked_up_not_scanned_for_every_node():
    inventory = Inventory.from_slices(DRIVER, [Obj(_slice(f"n-{i}")) for i in range(NODES)])
    inventory.devices = CountingList(inventory.devices)
    CountingList.iterations = 0
    assert (inventory.per_node_min(), inventory.per_node_max()) == (8, 8)
    assert inventory.names_on("n-7") == [f"gpu-{i}" for i in range(8)] and inventory.on_node("absent") == []
    assert CountingList.iterations <= 2, CountingList.iterations  # nodes() once per call; no scan per node


def test_devices_per_node_count_in_one_pass_in_first_seen_order():
    devices = [{"node": f"n-{i % NODES}"} for i in range(8 * NODES)] + [{"node": ""}]
    per_node = slice_features.devices_per_node(CountingList(devices))
    assert list(per_node.items())[:2] == [("n-0", 8), ("n-1", 8)] and per_node["<no node>"] == 1
    assert len(per_node) == NODES + 1


def test_a_sweep_of_n_pods_lists_their_namespace_claims_once():
    from conformance.k8s.tracker import Tracker, claims_by_pod  # noqa: PLC0415
    from tests.harness.test_tracker import FakeK8s  # noqa: PLC0415

    class CountingK8s(FakeK8s):
        claim_lists = 0

        def list(self, kind, namespace=None, **kw):
            CountingK8s.claim_lists += kind == "ResourceClaim"
            return super().list(kind, namespace, **kw)

    k8s, pods = CountingK8s(), 300
    tracker = Tracker(k8s, phase_timeout=5)
    for i in range(pods):
        tracker.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "ns"}})
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": f"p-{i}", "uid": f"u-p-{i}"}]
        meta = {"name": f"p-{i}-gpu", "namespace": "ns", "ownerReferences": owner}
        k8s.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta})
    assert [c.name for c in claims_by_pod(k8s.list("ResourceClaim", "ns"))["p-7"]] == ["p-7-gpu"]
    CountingK8s.claim_lists = 0
    tracker.cleanup()
    assert len(k8s.deleted) == pods and CountingK8s.claim_lists == 1, CountingK8s.claim_lists  # was one per pod


def test_an_unreachable_kubelet_costs_discovery_one_attempt():
    """A kubelet behind the node proxy that answers 503 (kwok's fake nodes, a NotReady node) gives ``{}`` after
    one request: the read is not retried (~9 s per node with retries; discovery reads 8 nodes)."""
    from conformance.core import errors  # noqa: PLC0415
    from conformance.k8s import discovery  # noqa: PLC0415

    calls = []

    class Unreachable:
        def get_raw(self, path, query=None, *, retry=True):
            calls.append(retry)
            raise errors.TransientApiError(503, "ServiceUnavailable", "dial tcp 192.0.2.2:10250", request=path)

    assert discovery.kubelet_feature_gates(Unreachable(), "kwok-0") == {} and calls == [False]


def _all_claim(node: str) -> Obj:
    """A claim allocated every device of ``node`` (allocationMode All) through a driver-only DeviceClass."""
    results = [{"request": "gpu", "driver": DRIVER, "pool": node, "device": f"gpu-{i}"} for i in range(8)]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    allocation = {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [term]}}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
    meta = {"name": f"{node}-all", "namespace": "ns"}
    return Obj(
        {
            "kind": "ResourceClaim",
            "metadata": meta,
            "spec": {"devices": {"requests": [request]}},
            "status": {"allocation": allocation},
        }
    )


def test_all_mode_claims_look_their_node_up_not_scan_every_device():
    """``allocation.count`` for All-mode claims recomputes each node's devices from an index built once, not a
    scan of every published device per claim (2,000 claims x 16,000 devices)."""
    from conformance.dra.checks.allocations import check_allocations  # noqa: PLC0415

    classes = {
        "gpu": Obj(
            {
                "kind": "DeviceClass",
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        )
    }
    slices = [CountingObj(_slice(f"n-{i}")) for i in range(NODES)]
    claims = [_all_claim(f"n-{i}") for i in range(NODES)]
    claims[7].raw["status"]["allocation"]["devices"]["results"].pop()  # one claim is short of a device
    CountingObj.calls[0] = 0
    found = check_allocations(claims, slices, DRIVER, classes)
    assert [(v.rule, v.obj) for v in found] == [("allocation.count", "ResourceClaim/ns/n-7-all")], found
    assert CountingObj.calls[0] < 100 * len(slices), CountingObj.calls[0]  # a scan per claim: ~100,000,000
