"""Shared counters of partitionable devices (KEP-4815), read from ResourceSlices: which counter sets a pool
offers, what each device consumes, and whether a group of devices can be allocated together.

Sources: resource.k8s.io/v1 ResourceSlice ``spec.sharedCounters[] {name, counters: {<name>: {value}}}`` (in
the devices' slice on 1.34, in a slice of the same pool without devices from 1.35); Device
``consumesCounters[] {counterSet, counters: {<name>: {value}}}``; the allocator refuses a set of devices whose
summed consumption of one counter exceeds the counter set's value.
"""

from __future__ import annotations

from collections.abc import Iterable


def quantity(text: str):
    """A quantity string (``"40Gi"``) as a Decimal (kubernetes.utils.quantity.parse_quantity)."""
    from kubernetes.utils.quantity import parse_quantity  # noqa: PLC0415 - only for quantities

    return parse_quantity(text)


_quantity = quantity


def shared(pool: str, slices: Iterable) -> dict[tuple[str, str], dict[str, str]]:
    """``{(pool, counter set): {counter: quantity string}}`` of the ``sharedCounters`` in ``slices`` (one
    pool's slices, :class:`~conformance.core.objects.Obj`)."""
    out = {}
    for s in slices:
        for cs in s.get("spec.sharedCounters") or []:
            out[(pool, cs.get("name"))] = {k: (v or {}).get("value") for k, v in (cs.get("counters") or {}).items()}
    return out


def consumed(body: dict) -> tuple[tuple[str, str, str], ...]:
    """``((counter set, counter, quantity string), ...)`` a slice device's body consumes (``()`` when none)."""
    return tuple(
        (c.get("counterSet"), name, (v or {}).get("value"))
        for c in body.get("consumesCounters") or []
        for name, v in sorted((c.get("counters") or {}).items())
    )


def fit(devices: Iterable, counter_sets: dict[tuple[str, str], dict[str, str]]) -> bool:
    """Whether ``devices`` (with ``pool`` and ``consumes``, see :class:`~conformance.dra.inventory.Device`)
    consume together no more of each counter than its counter set offers; a counter set or counter the pool
    does not publish counts as zero (such a device cannot be allocated at all)."""
    totals: dict[tuple[str, str, str], object] = {}
    for d in devices:
        for counter_set, counter, value in d.consumes:
            key = (d.pool, counter_set, counter)
            totals[key] = totals.get(key, 0) + _quantity(value)
    for (pool, counter_set, counter), total in totals.items():
        offered = (counter_sets.get((pool, counter_set)) or {}).get(counter)
        if offered is None or total > _quantity(offered):
            return False
    return True
