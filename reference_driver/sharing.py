"""What prepared devices physically hold, so the driver refuses what the hardware could not do (pure).

A simulated partitionable GPU has memory slices: a prepared partition (or the whole GPU) holds its slices
(``Device.occupies``), and NodePrepareResources fails when one of them is already held, as creating a MIG
instance on busy slices fails. A multi-allocatable device holds, per share, the capacity the scheduler recorded
in ``consumedCapacity``; preparing more than the device's real capacity fails. On a healthy driver the
published counters and capacities match these limits, so a correct allocator never hits them; the faults below
publish or hold something else, and the conformance suite must notice.

Faults: ``counters-understated`` (a partition of more than one slice publishes only its first slice counter),
``capacity-overstated`` (multi-allocatable devices publish twice their capacity), ``share-ignored`` (a
multi-allocatable device is prepared as if exclusive), ``partition-not-freed`` (unprepare keeps the slices).
Sources: KEP-4815 (sharedCounters/consumesCounters), KEP-5075 (allowMultipleAllocations, consumedCapacity).
"""

from __future__ import annotations

import dataclasses

from . import quantities
from .inventory.base import Capacity, Device, Snapshot

Holds = dict[str, int]  # physical unit -> amount (slices: 1; capacity: bytes)


def as_published(snapshot: Snapshot, understate_counters: bool = False, overstate_capacity: bool = False) -> Snapshot:
    """The snapshot the driver publishes: ``snapshot`` itself, or with the faults ``counters-understated`` /
    ``capacity-overstated`` applied (the device's real limits stay those of ``snapshot``)."""
    if not (understate_counters or overstate_capacity):
        return snapshot
    devices = []
    for real in snapshot.devices:
        dev = real
        if understate_counters and dev.attribute("partition") and len(dev.occupies) > 1:
            dev = dataclasses.replace(dev, consumes_counters=tuple(_first_slice(c) for c in dev.consumes_counters))
        if overstate_capacity and dev.allow_multiple_allocations:
            doubled = {
                k: Capacity(quantities.canonical(2 * quantities.parse(c.value)), c.request_policy)
                for k, c in dev.capacity.items()
            }
            dev = dataclasses.replace(dev, capacity=doubled)
        devices.append(dev)
    return dataclasses.replace(snapshot, devices=tuple(devices))


def _first_slice(consumption: tuple[str, tuple[tuple[str, str], ...]]) -> tuple[str, tuple[tuple[str, str], ...]]:
    counter_set, counters = consumption
    slots = [c for c in counters if c[0].startswith("slice")]
    return counter_set, tuple(c for c in counters if not c[0].startswith("slice") or c == slots[0])


def holds(device: Device, consumed: tuple[tuple[str, str], ...], exclusive_shares: bool = False) -> Holds:
    """The physical units a prepared allocation of ``device`` holds: its slices, or per capacity the
    ``consumed`` amount (``consumedCapacity`` of the result; the full capacity when none was recorded) of a
    multi-allocatable device (``exclusive_shares``, fault ``share-ignored``: the whole device, as one unit)."""
    out: Holds = {unit: 1 for unit in device.occupies}
    if device.allow_multiple_allocations:
        if exclusive_shares:
            return {**out, f"{device.name}/exclusive": 1}
        amounts = dict(consumed)
        for name, cap in device.capacity.items():
            out[f"{device.name}/{name}"] = quantities.parse(amounts.get(name, cap.value))
    return out


def limits(snapshot: Snapshot) -> Holds:
    """What each physical unit of ``snapshot`` (the real, unfaulted one) offers; each device offers itself once
    (held only under the fault ``unprepare-needs-claim-cdi-only``)."""
    out: Holds = {}
    for dev in snapshot.devices:
        out[dev.name] = 1
        out.update({unit: 1 for unit in dev.occupies})
        if dev.allow_multiple_allocations:
            out[f"{dev.name}/exclusive"] = 1
            out.update({f"{dev.name}/{k}": quantities.parse(c.value) for k, c in dev.capacity.items()})
    return out


def shortfall(wanted: Holds, held: dict[str, Holds], offered: Holds) -> str | None:
    """Why ``wanted`` does not fit next to ``held`` (``{holder: holds}``) within ``offered``; None when it fits.
    The text names the unit, the amounts and the holders."""
    for unit, amount in sorted(wanted.items()):
        holders = {who: h[unit] for who, h in held.items() if h.get(unit)}
        total = amount + sum(holders.values())
        if total > offered.get(unit, amount):
            return (
                f"{unit}: needs {amount}, {sum(holders.values())} of {offered.get(unit)} already held by "
                f"{', '.join(sorted(holders))}"
            )
    return None
