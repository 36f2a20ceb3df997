"""A ResourceClaim allocation written by the test itself through the claim's status subresource, for an
allocation the scheduler cannot build on a cluster with one registered driver: one result of the driver under
test beside a result of another (test-made, never registered) driver. A pod of such a claim would never start
and never be unprepared by the kubelet (the other driver has no kubelet plugin), so the driver under test is
called directly (``dra_plugin`` fixture) and nothing but the test holds the claim.

Sources: resource.k8s.io/v1 AllocationResult (``devices.results[]``: request, driver, pool, device;
``nodeSelector``) and the ResourceClaim status subresource (upstream test/e2e/dra "CRUD Tests" writes a claim
status); DeviceRequestAllocationResult.driver ("the driver which handles this device").
"""

from __future__ import annotations

from typing import Any

from conformance.core.objects import Obj
from conformance.dra.inventory import Device, Inventory

K8s = Any  # the conformance.k8s client (this layer never imports it)


def allocated_keys(k8s: K8s) -> set[tuple[str, str, str]]:
    """``{(driver, pool, device)}`` that some ResourceClaim of the cluster has allocated now (every namespace)."""
    return {
        (r.get("driver"), r.get("pool"), r.get("device"))
        for claim in k8s.list("ResourceClaim", None)
        for r in claim.get("status.allocation.devices.results") or []
    }


def free_device(k8s: K8s, inventory: Inventory) -> Device:
    """A node-local device of ``inventory`` without taints that no ResourceClaim has allocated now: one without
    binding conditions first (by node, pool, name), else one with them (a driver that publishes binding
    conditions on every device, KEP-5007: only the scheduler waits for them; a written allocation carries none,
    so nothing waits on them). Raises LookupError naming the allocated devices when none is free. Hold the
    cluster (xdist group ``dra-cluster-state``) so no scheduler takes it meanwhile."""
    taken = allocated_keys(k8s)
    for dev in sorted(inventory.devices, key=lambda d: (bool(d.binding_conditions), d.node, d.pool, d.name)):
        if dev.node and not dev.taints and (inventory.driver, *dev.key) not in taken:
            return dev
    raise LookupError(f"no free untainted node-local device of {inventory.driver}: allocated now {sorted(taken)}")


def result(request: str, driver: str, pool: str, device: str) -> dict:
    """One ``DeviceRequestAllocationResult`` (resource.k8s.io/v1) naming ``driver``/``pool``/``device``."""
    return {"request": request, "driver": driver, "pool": pool, "device": device}


def allocate(k8s: K8s, claim, results: list[dict], node: str):
    """Write ``status.allocation`` of ``claim`` (an Obj of this test) with ``results`` (:func:`result`) and a
    node selector for ``node`` (``metadata.name`` field); returns the stored claim. Raises the API error
    (e.g. Invalid naming the field) when the server refuses it."""
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    status = {"allocation": {"devices": {"results": list(results)}, "nodeSelector": selector}}
    return k8s.replace(Obj({**claim.to_dict(), "status": status}), subresource="status")
