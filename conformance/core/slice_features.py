"""What a driver's ResourceSlices show about its features, read from the discovered device list (one entry per
published device: ``node``, ``pool``, ``device`` and the fields of :mod:`conformance.k8s.discovery`), and the gate
each gated driver capability needs. Pure functions of that list; used by :mod:`conformance.core.capabilities`.

Sources: ResourceSlice ``spec.sharedCounters`` / ``devices[].consumesCounters`` (KEP-4815),
``allowMultipleAllocations`` (KEP-5075), ``taints`` (KEP-5055), ``bindingConditions`` (KEP-5007).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping


def devices_per_node(devices: list[Mapping]) -> dict[str, int]:  # one pass (Counter), in first-seen node order
    return dict(collections.Counter(d.get("node") or "<no node>" for d in devices))


# the gate each gated driver capability needs
DRIVER_GATES = {
    "admin_access": "gate.DRAAdminAccess",
    "prioritized_list": "gate.DRAPrioritizedList",
    "partitions": "gate.DRAPartitionableDevices",
    "consumable_capacity": "gate.DRAConsumableCapacity",
    "taints": "gate.DRADeviceTaints",
    "published_taints": "gate.DRADeviceTaints",
    "device_status": "gate.DRAResourceClaimDeviceStatus",
    "binding_conditions": "gate.DRADeviceBindingConditions",
    "extended_resource_name": "gate.DRAExtendedResource",
}


def with_fields(devices: list[Mapping], *fields: str) -> list[str]:  # "pool/device" of the devices showing a field
    return sorted(f"{d.get('pool')}/{d.get('device')}" for d in devices if any(d.get(f) for f in fields))


# driver features the ResourceSlices show (ResourceSlice spec.sharedCounters / devices[].consumesCounters,
# allowMultipleAllocations, taints, bindingConditions): key -> (devices showing it, what is shown, what is missing)
SLICE_FEATURES = {
    "partitions": (
        lambda ds: with_fields(ds, "shared_counters", "consumes_counters"),
        "slices publish sharedCounters/consumesCounters",
        "no slice of {driver} has sharedCounters or consumesCounters",
    ),
    "consumable_capacity": (
        lambda ds: with_fields(ds, "allow_multiple_allocations"),
        "devices set allowMultipleAllocations",
        "no device of {driver} sets allowMultipleAllocations",
    ),
    "published_taints": (
        lambda ds: with_fields(ds, "taints"),
        "devices with taints",
        "no device of {driver} has taints",
    ),
    "binding_conditions": (
        lambda ds: with_fields(ds, "binding_conditions"),
        "devices publish bindingConditions",
        "no device of {driver} publishes bindingConditions",
    ),
}
