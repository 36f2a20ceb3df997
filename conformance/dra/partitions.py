"""Partitionable devices picked from the driver's published inventory (KEP-4815), for the partition suite:
which devices of one counter set fit together and which one more would over-allocate it, which two devices
never fit together (e.g. the one taking the whole counter set and a partition), and one partition (tests pin
each with :meth:`Inventory.selector_for`).

Everything is recomputed from the driver's ResourceSlices (``sharedCounters``, ``consumesCounters``) through
:class:`~conformance.dra.inventory.Inventory`; nothing trusts an allocation. Pure: no cluster access.
Sources: resource.k8s.io/v1 ResourceSlice ``spec.sharedCounters``, Device ``consumesCounters``; upstream
"must consume and free up counters" (test/e2e/dra/dra.go).
"""

from __future__ import annotations

import dataclasses

from conformance.dra import counters
from conformance.dra.inventory import Device, Inventory


def _sets(device: Device) -> set[tuple[str, str]]:
    return {(device.pool, cs) for cs, _, _ in device.consumes}


def _share(device: Device, offered: dict[str, str]) -> float:
    """The fraction of its counter set ``device`` consumes, summed over the set's counters."""
    return sum(
        float(counters.quantity(v) / counters.quantity(offered[c])) for _, c, v in device.consumes if offered.get(c)
    )


def _whole(device: Device, offered: dict[str, str]) -> bool:
    """Whether ``device`` consumes all of every counter of its (single) counter set."""
    mine = {c: v for _, c, v in device.consumes}
    return set(mine) == set(offered) and all(counters.quantity(mine[c]) == counters.quantity(offered[c]) for c in mine)


@dataclasses.dataclass(frozen=True)
class CounterSetDevices:
    """The devices of one node drawing on one counter set ``(pool, name)``: ``whole`` (consuming all of it, or
    None) and ``partitions`` (the others, largest share first, then published order)."""

    node: str
    counter_set: tuple[str, str]
    whole: Device | None
    partitions: tuple[Device, ...]


def counter_sets(inventory: Inventory) -> list[CounterSetDevices]:
    """Every counter set with devices on a node, devices consuming from two sets left out."""
    out = []
    for node in inventory.nodes():
        single = [d for d in inventory.on_node(node) if len(_sets(d)) == 1]
        for key in sorted({k for d in single for k in _sets(d)}):
            offered = inventory.counter_sets.get(key) or {}
            on_set = [d for d in single if _sets(d) == {key}]
            whole = next((d for d in on_set if _whole(d, offered)), None)
            parts = sorted((d for d in on_set if d is not whole), key=lambda d: -_share(d, offered))
            out.append(CounterSetDevices(node, key, whole, tuple(parts)))
    return out


@dataclasses.dataclass(frozen=True)
class Packing:
    """Partitions of one counter set on ``node`` that ``fit`` together (one or more), and ``extra``: a device
    of that set (a partition left over, else the device taking the whole set) that fits alone but not next to
    them, so allocating it too would over-allocate the counter set ``counter_set``; ``None`` when every device
    of the set fits together per its published counters."""

    node: str
    counter_set: tuple[str, str]
    fit: tuple[Device, ...]
    extra: Device | None


def _fits(devices, inventory: Inventory) -> bool:
    return counters.fit(devices, inventory.counter_sets)


def _pack(group: CounterSetDevices, inventory: Inventory) -> Packing:
    """Pack ``group``'s partitions largest first; the extra is the first leftover partition, else the whole
    device, that fits alone but not next to the packed ones."""
    chosen: list[Device] = []
    for d in group.partitions:
        if _fits([*chosen, d], inventory):
            chosen.append(d)
    rest = [d for d in group.partitions if d not in chosen] + ([group.whole] if group.whole else [])
    extra = next((d for d in rest if _fits([d], inventory) and not _fits([*chosen, d], inventory)), None)
    return Packing(group.node, group.counter_set, tuple(chosen), extra)


def _shared(inventory: Inventory) -> list[CounterSetDevices]:
    """The counter sets two or more devices draw on (a set with one device cannot be over-allocated)."""
    return [g for g in counter_sets(inventory) if g.partitions and (g.whole or len(g.partitions) >= 2)]


def _none_shared(inventory: Inventory) -> LookupError:
    return LookupError(
        f"no counter set of {inventory.driver} is drawn on by two devices that consume from it alone; "
        f"counter sets: {inventory.counter_sets}"
    )


def packing(inventory: Inventory) -> Packing:
    """The partitions of one counter set that fit together and the device that would over-allocate it.

    Prefers the first counter set with an ``extra`` and two or more fitting partitions, then one with an
    ``extra``, then one with two or more fitting partitions: a set whose devices never collide per their
    published counters (the defect the partition test targets) still yields the partitions that must all run
    together. Raises LookupError, with the counter sets seen, only when no counter set is drawn on by two
    devices (e.g. the driver publishes no shared counters)."""
    packs = [_pack(g, inventory) for g in _shared(inventory)]
    if not packs:
        raise _none_shared(inventory)
    return max(packs, key=lambda p: (p.extra is not None, len(p.fit) >= 2))  # max keeps the first of equals


def partition(inventory: Inventory) -> Device:
    """One partition of a counter set that two or more devices draw on: the smallest of the first such set
    (no device taking the whole set is needed). Raises LookupError with the counter sets seen when none."""
    groups = _shared(inventory)
    if not groups:
        raise _none_shared(inventory)
    return groups[0].partitions[-1]


def whole_and_partition(inventory: Inventory) -> tuple[Device, Device]:
    """``(whole, partition)``: two devices of one counter set that each fit alone but never together (the
    "whole" takes the counters the partition needs: a device consuming all of the set when published, else
    e.g. a 3g partition next to a 1g one on the same memory slice). Prefers the device taking the whole set,
    and the smallest partition. Raises LookupError with the counter sets seen when no set has such a pair."""
    for group in _shared(inventory):
        others = ([group.whole] if group.whole else []) + list(group.partitions)
        for part in reversed(group.partitions):
            for whole in others:
                if whole is not part and _fits([whole], inventory) and _fits([part], inventory):
                    if not _fits([whole, part], inventory):
                        return whole, part
    raise LookupError(
        f"no counter set of {inventory.driver} has two devices that fit alone but not together; "
        f"counter sets: {inventory.counter_sets}"
    )
