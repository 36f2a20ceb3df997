"""What the API and KEP-4381 require of a driver's own ResourceSlices, one small pure rule per function.

Each rule takes the driver's slices (every pool and generation, as listed from the API) and returns
:class:`~conformance.dra.checks.base.Violation` s with a stable id ``slice.<name>``; :func:`check_slices` runs them
all. Pools are read through :mod:`conformance.dra.inventory` (highest generation per pool, attribute names
qualified with the driver's domain), the one place that flattens slices.

Sources: resource.k8s.io/v1 ResourceSliceSpec (nodeName / nodeSelector / allNodes / perDeviceNodeSelection,
"exactly one ... must be set"; devices "must not have more than 128 entries. If any device uses taints or
consumes counters the limit is 64" (1.35+ validation; 1.34 allows 128 for all: the lower limit keeps a slice
valid on every supported release); ResourcePool generation / resourceSliceCount); k8s.io/api resource/v1
``ResourceSliceMaxDevices`` = 128, ``ResourceSliceMaxAttributesAndCapacitiesPerDevice`` = 32; KEP-4381
(pool consistency; node-local slices owned by their Node so they are garbage-collected with it, as the
k8s.io/dynamic-resource-allocation kubelet plugin helper does); feature-catalog PUB-01, PUB-11, LIM-*.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.core.objects import Obj
from conformance.dra.checks.base import Violation
from conformance.dra.inventory import current_slices, device_body, device_fields, qualify, typed_attributes

MAX_DEVICES = 128  # ResourceSliceMaxDevices
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64  # 1.35+ ResourceSliceSpec.devices
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
NODE_SCOPE_FIELDS = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
SPEC = "resource.k8s.io/v1 ResourceSliceSpec"


def _ref(s: Obj) -> str:
    return f"ResourceSlice/{s.name}"


def node_scope(slices: list[Obj]) -> list[Violation]:
    """``slice.node-scope``: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is set
    (false and empty values count as unset)."""
    out = []
    for s in slices:
        set_ = [f for f in NODE_SCOPE_FIELDS if s.get(f"spec.{f}")]
        if len(set_) != 1:
            out.append(
                Violation(
                    "slice.node-scope",
                    _ref(s),
                    f"{len(set_)} of {list(NODE_SCOPE_FIELDS)} set ({set_ or 'none'}); exactly one must be",
                    f"{SPEC}.nodeName: exactly one of NodeName, NodeSelector, AllNodes, PerDeviceNodeSelection",
                )
            )
    return out


def node_owner(slices: list[Obj]) -> list[Violation]:
    """``slice.node-owner``: a slice with ``nodeName`` has an ownerReference to that Node (apiVersion v1,
    kind Node, name = nodeName), so it is garbage-collected with the Node."""
    out = []
    for s in slices:
        node = s.get("spec.nodeName")
        if not node:
            continue
        owners = s.get("metadata.ownerReferences") or []
        if not any(o.get("apiVersion") == "v1" and o.get("kind") == "Node" and o.get("name") == node for o in owners):
            seen = [f"{o.get('kind')}/{o.get('name')}" for o in owners] or "none"
            out.append(
                Violation(
                    "slice.node-owner",
                    _ref(s),
                    f"nodeName {node} but no ownerReference to Node/{node} (owners: {seen})",
                    "KEP-4381 (slices owned by their Node); upstream 'kubelet must manage ResourceSlices' (PUB-01)",
                )
            )
    return out


def node_owner_uids(slices: list[Obj], node_uids: Mapping[str, str]) -> list[Violation]:
    """``slice.node-owner-uid``: the Node ownerReference of a node-local slice carries that Node's current
    UID (``node_uids``: {node name: uid}); a stale UID makes the garbage collector delete the slice."""
    out = []
    for s in slices:
        node = s.get("spec.nodeName")
        if not node or node not in node_uids:
            continue
        uids = {o.get("uid") for o in s.get("metadata.ownerReferences") or [] if o.get("kind") == "Node"}
        if uids and node_uids[node] not in uids:
            out.append(
                Violation(
                    "slice.node-owner-uid",
                    _ref(s),
                    f"ownerReference UID(s) {sorted(uids)} are not Node/{node}'s UID {node_uids[node]}",
                    "metav1.OwnerReference.uid; upstream 'kubelet must manage ResourceSlices' (PUB-01)",
                )
            )
    return out


def pool_consistency(slices: list[Obj]) -> list[Violation]:
    """``slice.pool-generation``: all slices of a pool share one generation (older ones are left-overs);
    ``slice.pool-count``: the slices of the highest generation all carry ``resourceSliceCount`` equal to
    their number (otherwise the pool never looks complete, or looks complete while a slice is missing)."""
    out = []
    generations: dict[str, set[int]] = {}  # one pass over the slices, not one per pool
    for s in slices:
        generations.setdefault(s.get("spec.pool.name"), set()).add(int(s.get("spec.pool.generation") or 0))
    for pool, current in current_slices(slices).items():
        gens = sorted(generations[pool])
        if len(gens) > 1:
            out.append(
                Violation(
                    "slice.pool-generation",
                    f"pool/{pool}",
                    f"slices of generations {gens}; only the highest should remain",
                    "resource.k8s.io/v1 ResourcePool.generation; KEP-4381 (PUB-11)",
                )
            )
        counts = sorted({int(s.get("spec.pool.resourceSliceCount") or 0) for s in current})
        if counts != [len(current)]:
            out.append(
                Violation(
                    "slice.pool-count",
                    f"pool/{pool}",
                    f"resourceSliceCount {counts} but {len(current)} slice(s) of generation {gens[-1]}: "
                    f"{sorted(s.name for s in current)}",
                    "resource.k8s.io/v1 ResourcePool.resourceSliceCount; KEP-4381 (PUB-11)",
                )
            )
    return out


def duplicate_devices(slices: list[Obj]) -> list[Violation]:
    """``slice.duplicate-device``: device names are unique within a pool (its current generation), since an
    allocation result names a device by (driver, pool, device)."""
    out = []
    for pool, current in current_slices(slices).items():
        where: dict[str, list[str]] = {}
        for s in current:
            for d in s.get("spec.devices") or []:
                where.setdefault(device_fields(d)[0], []).append(s.name)
        dups = {name: names for name, names in where.items() if len(names) > 1}
        if dups:
            out.append(
                Violation(
                    "slice.duplicate-device",
                    f"pool/{pool}",
                    f"device names published more than once (device: slices): {dups}",
                    "resource.k8s.io/v1 Device.name (unique in the pool); DeviceRequestAllocationResult",
                )
            )
    return out


def size_limits(slices: list[Obj]) -> list[Violation]:
    """``slice.max-devices``: at most 128 devices per slice, 64 when a device has taints or consumes counters;
    ``slice.max-device-fields``: at most 32 attributes and capacities together per device."""
    out = []
    for s in slices:
        devices = s.get("spec.devices") or []
        bodies = [device_body(d) for d in devices]
        special = any(b.get("taints") or b.get("consumesCounters") for b in bodies)
        limit = MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if special else MAX_DEVICES
        if len(devices) > limit:
            why = " (a device has taints or consumes counters)" if special else ""
            out.append(
                Violation(
                    "slice.max-devices",
                    _ref(s),
                    f"{len(devices)} devices, limit {limit}{why}: split the pool into more slices",
                    f"{SPEC}.devices; ResourceSliceMaxDevices",
                )
            )
        for d in devices:
            name, attrs, cap = device_fields(d)
            if len(attrs) + len(cap) > MAX_ATTRIBUTES_AND_CAPACITIES:
                out.append(
                    Violation(
                        "slice.max-device-fields",
                        f"{_ref(s)}/{name}",
                        f"{len(attrs)} attributes + {len(cap)} capacities > {MAX_ATTRIBUTES_AND_CAPACITIES}",
                        "ResourceSliceMaxAttributesAndCapacitiesPerDevice",
                    )
                )
    return out


def declared_attributes(slices: list[Obj], driver: str, attributes: Mapping[str, str]) -> list[Violation]:
    """``slice.attribute-missing``: every pool with devices publishes each profile-declared attribute on at
    least one device (a pool may mix kinds of device: a partition lacks some of a GPU's attributes);
    ``slice.attribute-type``: every published value of a declared attribute has the declared type
    (``attributes``: {name: int|bool|string|version}; unqualified names get the driver's domain)."""
    declared = {qualify(driver, k): v for k, v in attributes.items()}
    out = []
    for pool, current in current_slices(slices).items():
        seen: set[str] = set()
        for s in current:
            for d in s.get("spec.devices") or []:
                name, attrs, _ = device_fields(d)
                for attr, (typ, value) in typed_attributes(attrs).items():
                    qualified = qualify(driver, attr)
                    seen.add(qualified)
                    if qualified in declared and typ != declared[qualified]:
                        out.append(
                            Violation(
                                "slice.attribute-type",
                                f"{_ref(s)}/{name}",
                                f"attribute {qualified} is {typ} {value!r}, the profile declares {declared[qualified]}",
                                "resource.k8s.io/v1 DeviceAttribute (one typed value); driver profile attributes",
                            )
                        )
        has_devices = any(s.get("spec.devices") for s in current)
        missing = sorted(set(declared) - seen) if has_devices else []
        if missing:
            out.append(
                Violation(
                    "slice.attribute-missing",
                    f"pool/{pool}",
                    f"no device publishes the declared attribute(s) {missing}",
                    "resource.k8s.io/v1 Device.attributes; driver profile attributes",
                )
            )
    return out


def check_slices(slices: list[Obj], driver: str, attributes: Mapping[str, str]) -> list[Violation]:
    """Violations of the slice rules by ``slices`` (every ResourceSlice of ``driver``, all pools and generations,
    as listed from the API); ``attributes``: the profile's declared ``{attribute name: type}``. An empty list
    means every rule holds; slices of another driver are ignored."""
    own = [s for s in slices if s.get("spec.driver") == driver]
    return [
        *node_scope(own),
        *node_owner(own),
        *pool_consistency(own),
        *duplicate_devices(own),
        *size_limits(own),
        *declared_attributes(own, driver, attributes),
    ]
