"""Partitionable devices picked from the driver's published inventory (KEP-4815), for the partition suite:
which devices of one counter set fit together and which one more would over-allocate it, and which device
takes a whole counter set (tests pin each with :meth:`Inventory.selector_for`).

Everything is recomputed from the driver's ResourceSlices (``sharedCounters``, ``consumesCounters``) through
:class:`~conformance.k8s.inventory.Inventory`; nothing trusts an allocation. Pure: no cluster access.
Sources: resource.k8s.io/v1 ResourceSlice ``spec.sharedCounters``, Device ``consumesCounters``; upstream
"must consume and free up counters" (test/e2e/dra/dra.go).
"""

from __future__ import annotations

import dataclasses

from . import counters
from .inventory import Device, Inventory


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
    """Partitions of one counter set on ``node`` that ``fit`` together, and ``extra``: one that fits alone but
    not next to them (allocating it too would over-allocate the counter set ``counter_set``)."""

    node: str
    counter_set: tuple[str, str]
    fit: tuple[Device, ...]
    extra: Device


def packing(inventory: Inventory) -> Packing:
    """The first counter set whose partitions, packed largest first, fit two or more together and leave one
    over. Raises LookupError with the counter sets seen when none does."""
    for group in counter_sets(inventory):
        chosen: list[Device] = []
        for d in group.partitions:
            if counters.fit([*chosen, d], inventory.counter_sets):
                chosen.append(d)
        extra = next(
            (
                d
                for d in group.partitions
                if d not in chosen
                and counters.fit([d], inventory.counter_sets)
                and not counters.fit([*chosen, d], inventory.counter_sets)
            ),
            None,
        )
        if len(chosen) >= 2 and extra is not None:
            return Packing(group.node, group.counter_set, tuple(chosen), extra)
    raise LookupError(
        f"no counter set of {inventory.driver} has two partitions that fit together and one more that would "
        f"over-allocate it; counter sets: {inventory.counter_sets}"
    )


def whole_and_partition(inventory: Inventory) -> tuple[Device, Device]:
    """``(whole, partition)``: a device that consumes a whole counter set and another device of that set.
    Raises LookupError with the counter sets seen when no counter set has both."""
    for group in counter_sets(inventory):
        if group.whole is not None and group.partitions:
            return group.whole, group.partitions[-1]
    raise LookupError(
        f"no device of {inventory.driver} consumes all of a counter set that partitions also draw on; "
        f"counter sets: {inventory.counter_sets}"
    )
