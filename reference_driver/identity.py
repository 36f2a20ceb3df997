"""The CDI spec of a claim, with the faults that break what it says a device is (its identity: uuid env, device
nodes), while the device name in its env stays right, so the probe tests that read the name still pass.

Faults: ``cdi-identity-swapped`` (each device's entry carries the uuid and device nodes of the next device of
the node in name order: a driver that indexes its hardware table off by one) and ``cdi-spec-all-devices`` (the
spec-wide ``containerEdits`` carry the uuid env and device nodes of every device of the node: a driver-wide
spec listing all devices, so every container of the claim is handed all of them); ``capacity-granted-whole``
(a share of a multi-allocatable device is prepared with the device's whole capacity in its CDI env: the
driver ignores ``consumedCapacity``; its holds stay right, so only the container shows it);
``cdi-node-unanswered`` (each device's nodes move to a second CDI entry whose ID is not answered: the spec on
the node names them, the container never gets them); ``cdi-node-numbers-swapped`` (each device node carries type
``c`` and the major:minor of the next device's host node: the runtime creates it from those numbers).
Source: CDI SPEC.md ``containerEdits``; issue 24 §3 (device identity beyond env).
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from . import cdi
from .claims import AllocatedDevice, ClaimRef
from .faults import Faults
from .inventory.base import Device, Snapshot


def build_spec(
    ref: ClaimRef, pairs: list[tuple[AllocatedDevice, Device | None]], snap: Snapshot, faults: Faults, kind: str
) -> tuple[dict, list[str]]:
    """:func:`cdi.build_spec` for ``ref``'s ``(allocation, device)`` pairs (``skip-cdi-env`` included), changed
    by the identity faults above. Returns ``(spec, CDI device IDs)``."""
    if faults.on("capacity-granted-whole"):
        pairs = [(_granted_whole(alloc, device), device) for alloc, device in pairs]
    if faults.on("cdi-identity-swapped"):
        pairs = [(alloc, _next_identity(device, snap)) for alloc, device in pairs]
    if faults.on("cdi-node-hostpath-swapped"):
        pairs = [(alloc, _next_host_node(device, snap)) for alloc, device in pairs]
    spec, ids = cdi.build_spec(ref, pairs, skip_env=faults.on("skip-cdi-env"), kind=kind)
    if faults.on("cdi-node-numbers-swapped"):
        for entry, (_, device) in zip(spec["devices"], pairs, strict=True):
            numbers = _char_numbers(_next_host_node(device, snap))
            for node in (entry.get("containerEdits") or {}).get("deviceNodes") or []:
                node.update(numbers)
    if faults.on("cdi-node-unanswered"):
        spec["devices"] = [part for entry in spec["devices"] for part in _nodes_apart(entry)]
    if faults.on("cdi-spec-all-devices"):
        everyone = sorted(snap.devices, key=lambda d: d.name)
        env = [f"DRA_GPU_{cdi.env_key(d.name)}_UUID={d.attribute('uuid')}" for d in everyone if d.attribute("uuid")]
        nodes = [n for d in everyone for n in cdi.node_edits(d)]
        spec["containerEdits"] = {"env": env, **({"deviceNodes": nodes} if nodes else {})}
    return spec, ids


def _nodes_apart(entry: dict) -> list[dict]:
    """Fault ``cdi-node-unanswered``: ``entry`` (``{"name", "containerEdits"}``) without its device nodes, and
    an entry ``<name>-node`` carrying them, whose CDI ID is never answered ([entry] when it has none)."""
    edits = dict(entry.get("containerEdits") or {})
    nodes = edits.pop("deviceNodes", None)
    if not nodes:
        return [entry]
    apart = {"name": f"{entry['name']}-node", "containerEdits": {"deviceNodes": nodes}}
    return [{**entry, "containerEdits": edits}, apart]


def _next_identity(device: Device | None, snap: Snapshot) -> Device | None:
    """``device`` under its own name with the uuid and device nodes of the next device of ``snap`` by name
    (wrapping; unchanged when it is the only one or None)."""
    names = sorted(d.name for d in snap.devices)
    if device is None or device.name not in names or len(names) < 2:
        return device
    other = snap.device(names[(names.index(device.name) + 1) % len(names)])
    attributes = {**device.attributes, **({"uuid": other.attributes["uuid"]} if "uuid" in other.attributes else {})}
    return replace(device, attributes=attributes, device_nodes=other.device_nodes, node_host=other.node_host)


def _next_host_node(device: Device | None, snap: Snapshot) -> Device | None:
    """``device`` with its own device node paths and the host node of the next device of ``snap`` by name
    (wrapping) whose host node differs (unchanged when there is none, or when ``device`` has no node)."""
    names = sorted(d.name for d in snap.devices)
    if device is None or not device.device_nodes or device.name not in names:
        return device
    start = names.index(device.name)
    for step in range(1, len(names)):
        other = snap.device(names[(start + step) % len(names)])
        if other.node_host and other.node_host != device.node_host:
            return replace(device, node_host=other.node_host)
    return device


def _char_numbers(device: Device | None) -> dict:
    """``{"type": "c", "major", "minor"}`` of ``device``'s host node (``{}`` when it has none or it is no
    character device)."""
    try:
        st = os.stat(device.node_host) if device and device.node_host else None
    except OSError:
        return {}
    if st is None or not stat.S_ISCHR(st.st_mode):
        return {}
    return {"type": "c", "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)}


def _granted_whole(alloc: AllocatedDevice, device: Device | None) -> AllocatedDevice:
    """``alloc`` with each consumed capacity replaced by the device's whole capacity of that name."""
    if device is None or not alloc.consumed_capacity:
        return alloc
    whole = tuple((k, device.capacity[k].value if k in device.capacity else v) for k, v in alloc.consumed_capacity)
    return replace(alloc, consumed_capacity=whole)
