"""Inventory -> ResourceSlices of this node's pool (pure: no kubernetes import).

Layout: one pool per node, pool name = node name; devices in slices of at most 128 devices, or 64 when any
device of the slice consumes counters or has taints; counter sets (``sharedCounters``, at most 8 sets and
32 counters per slice) in their own slices for API servers >= 1.35 (where ``devices`` and ``sharedCounters``
are mutually exclusive), or next to the devices that consume them for 1.34 (where a device may only reference
counter sets of its own slice); an empty inventory still yields one slice with no devices ("driver started" signal).
Slice names are deterministic (``<node>-<driver>-<index>``), so a restarted plugin finds and keeps the
same objects. Every slice has ``nodeName`` and a controller ownerReference to its Node.
Sources: resource.k8s.io/v1 ResourceSlice validation (ResourceSliceMaxDevices 128,
ResourceSliceMaxDevicesWithTaintsOrConsumesCounters 64, ResourceSliceMaxCounterSets 8, 1.34's
ResourceSliceMaxSharedCounters 32 summed over a slice's counter sets, sharedCounters and
devices mutually exclusive since 1.35); upstream "kubelet must manage ResourceSlices"; PR #127645.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .inventory.base import Snapshot

MAX_DEVICES = 128
MAX_DEVICES_WITH_COUNTERS = 64
MAX_COUNTER_SETS = 8
MAX_SHARED_COUNTERS = 32  # counters summed over all counter sets of one slice (1.34 ResourceSliceMaxSharedCounters)
API_VERSION = "resource.k8s.io/v1"


@dataclass(frozen=True)
class PlannedSlice:
    """Content of one slice before generation and count are known."""

    name: str
    devices: tuple[dict, ...] = ()
    shared_counters: tuple[dict, ...] = ()


def slice_name(node: str, driver: str, index: int) -> str:
    """Deterministic slice name; hashed when it would exceed the 253-character DNS subdomain limit."""
    name = f"{node}-{driver}-{index}"
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(f"{node}/{driver}".encode()).hexdigest()[:16]
    return f"{node[:200]}-{digest}-{index}"


def _chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _room(sets: list[dict], counter_set: dict) -> bool:
    """Whether ``counter_set`` fits next to ``sets`` in one slice: at most 8 sets and 32 counters in all."""
    counted = sum(len(c["counters"]) for c in sets) + len(counter_set["counters"])
    return len(sets) < MAX_COUNTER_SETS and counted <= MAX_SHARED_COUNTERS


def _counter_slices(sets: list[dict]) -> list[list[dict]]:
    """Counter sets packed into slices of their own (see :func:`_room`)."""
    out: list[list[dict]] = []
    for cs in sets:
        if not out or not _room(out[-1], cs):
            out.append([])
        out[-1].append(cs)
    return out


def _combined(snapshot: Snapshot) -> list[tuple[tuple, tuple]]:
    """1.34 layout: each counter set travels with the devices consuming it (grouped by first counter set),
    packed into slices of <= 8 sets, <= 32 counters in all and <= 64 devices."""
    units = []
    for cs in snapshot.counter_sets:
        devs = [d.to_api() for d in snapshot.devices if d.consumes_counters and d.consumes_counters[0][0] == cs.name]
        units.append((cs.to_api(), devs))
    out: list[tuple[list, list]] = []
    for cs, devs in units:
        if not out or not _room(out[-1][1], cs) or len(out[-1][0]) + len(devs) > MAX_DEVICES_WITH_COUNTERS:
            out.append(([], []))
        out[-1][0].extend(devs)
        out[-1][1].append(cs)
    return [(tuple(devs), tuple(sets)) for devs, sets in out]


def plan(
    snapshot: Snapshot, node: str, driver: str, separate_counters: bool = True, max_devices: int | None = MAX_DEVICES
) -> list[PlannedSlice]:
    """Split the inventory into slice contents that respect the API limits.

    ``separate_counters``: True for API servers >= 1.35 (counter sets in slices of their own, first),
    False for 1.34 (counter sets next to their devices). ``max_devices``: devices per slice of devices that
    consume no counters; None puts them all in one slice (only the fault ``oversized-slice`` does that).
    Raises ValueError when a device consumes a counter set that the inventory does not define.
    """
    known = {c.name for c in snapshot.counter_sets}
    for dev in snapshot.devices:
        missing = [cs for cs, _ in dev.consumes_counters if cs not in known]
        if missing:
            raise ValueError(f"device {dev.name} consumes undefined counter set(s) {missing}")
    contents: list[tuple[tuple, tuple]] = []
    plain = [d.to_api() for d in snapshot.devices if not d.consumes_counters]
    counted = [d.to_api() for d in snapshot.devices if d.consumes_counters]
    if separate_counters:
        for sets in _counter_slices([c.to_api() for c in snapshot.counter_sets]):
            contents.append(((), tuple(sets)))
        for group in _chunks(counted, MAX_DEVICES_WITH_COUNTERS):
            contents.append((tuple(group), ()))
    else:
        contents.extend(_combined(snapshot))
    size = max_devices or max(len(plain), 1)
    if max_devices and any(d.get("taints") for d in plain):
        size = min(size, MAX_DEVICES_WITH_COUNTERS)  # the same 64-device limit holds for slices with taints
    for group in _chunks(plain, size):
        contents.append((tuple(group), ()))
    if not contents:
        contents.append(((), ()))
    return [PlannedSlice(slice_name(node, driver, i), devs, sets) for i, (devs, sets) in enumerate(contents)]


def render(
    planned: list[PlannedSlice],
    node: str,
    node_uid: str,
    driver: str,
    generation: int,
    slice_count: int | None = None,
    owned: bool = True,
) -> list[dict]:
    """Full ResourceSlice objects (``resource.k8s.io/v1``) for ``planned`` at ``generation``.

    ``slice_count`` overrides ``pool.resourceSliceCount`` (only the fault ``wrong-slice-count`` does that);
    ``owned=False`` leaves out the Node ownerReference (only the fault ``slices-no-owner`` does that).
    """
    count = len(planned) if slice_count is None else slice_count
    out = []
    for item in planned:
        spec: dict = {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
        }
        if item.shared_counters:
            spec["sharedCounters"] = [dict(c) for c in item.shared_counters]
        if item.devices or not item.shared_counters:
            spec["devices"] = [dict(d) for d in item.devices]
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ResourceSlice",
                "metadata": {
                    "name": item.name,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
                    ]
                    if owned
                    else [],
                },
                "spec": spec,
            }
        )
    return out


def edit_attributes(planned: list[PlannedSlice], drop: str = "", as_string: str = "") -> list[PlannedSlice]:
    """``planned`` with attribute ``drop`` removed from every device and attribute ``as_string`` published as
    a string of its value (only the faults ``attribute-missing`` and ``attribute-wrong-type`` do that)."""
    out = []
    for item in planned:
        devices = []
        for dev in item.devices:
            attrs = {k: v for k, v in (dev.get("attributes") or {}).items() if k != drop}
            if as_string in attrs:
                attrs[as_string] = {"string": str(next(iter(attrs[as_string].values())))}
            devices.append({**dev, "attributes": attrs} if "attributes" in dev else dict(dev))
        out.append(PlannedSlice(item.name, tuple(devices), item.shared_counters))
    return out


def without_taints(planned: list[PlannedSlice]) -> list[PlannedSlice]:
    """``planned`` with every device's ``taints`` left out (the fault ``taint-dropped``, and a server that
    dropped the field because its DRADeviceTaints gate is off)."""
    return [
        PlannedSlice(p.name, tuple({k: v for k, v in d.items() if k != "taints"} for d in p.devices), p.shared_counters)
        for p in planned
    ]


def _empty(value: object) -> bool:
    """Empty lists/maps and False are omitted by the API server on output (omitempty)."""
    return value in ([], (), {}, False, None)


SERVER_DEFAULTED = frozenset({"timeAdded"})
"""Keys the API server fills in that a desired slice leaves out (DeviceTaint.timeAdded, resource/v1 defaults)."""


def matches(want: object, have: object, equal_scalars=lambda a, b: a == b, exact: bool = False) -> bool:
    """True when ``have`` contains everything of ``want`` (empty values in ``want`` may be missing from
    ``have``; lists must match element by element). ``equal_scalars`` compares leaves (e.g. quantities).
    Extra keys in ``have`` are accepted as fields the server defaulted unless ``exact``: then only the
    :data:`SERVER_DEFAULTED` keys and empty values may be extra, so a field the desired slice dropped (a taint,
    an attribute) makes the slice differ and get rewritten."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        if exact and any(k not in want and k not in SERVER_DEFAULTED and not _empty(v) for k, v in have.items()):
            return False
        return all(matches(v, have[k], equal_scalars, exact) if k in have else _empty(v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(want) == len(have)
            and all(matches(w, h, equal_scalars, exact) for w, h in zip(want, have, strict=True))
        )
    return want == have or equal_scalars(want, have)


def with_duplicate_device(planned: list[PlannedSlice], node: str, driver: str) -> list[PlannedSlice]:
    """Fault ``duplicate-device-across-slices``: ``planned`` plus one slice repeating the pool's first device
    that consumes no counters (unchanged when there is none), so that name is published twice in the pool."""
    first = next((d for p in planned for d in p.devices if not d.get("consumesCounters")), None)
    if first is None:
        return planned
    return [*planned, PlannedSlice(slice_name(node, driver, len(planned)), (dict(first),))]
