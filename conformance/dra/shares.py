"""Consumable capacity picked from the driver's published devices (KEP-5075), for the consumable-capacity
suite: one device with ``allowMultipleAllocations``, one of its capacities, and two amounts its
``requestPolicy`` accepts as they are: ``small`` (two fit side by side) and ``large`` (no ``small`` fits next
to it).

Pure: reads ResourceSlices, no cluster access. Sources: resource.k8s.io/v1 Device
``allowMultipleAllocations``, DeviceCapacity ``value`` / ``requestPolicy`` (``default``, ``validValues``,
``validRange{min,max,step}``), ExactDeviceRequest ``capacity.requests``; upstream "must allow multiple
allocations and consume capacity" (test/e2e/dra/dra.go).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from conformance.dra.cel import cel_attribute_in
from conformance.dra.counters import quantity
from conformance.dra.inventory import Inventory, complete_pools, device_body, device_fields, slice_devices


@dataclasses.dataclass(frozen=True)
class SharedDevice:
    """A multi-allocatable device (``pool``/``name`` on ``node``, picked by the CEL ``selector``), its capacity
    ``key`` (as published; requests and ``consumedCapacity`` name it so) of ``value``, and the request amounts
    ``small`` and ``large`` (quantity strings)."""

    node: str
    pool: str
    name: str
    selector: str
    key: str
    value: str
    small: str
    large: str

    def requests(self, amount: str) -> dict[str, str]:
        """``capacity.requests`` of a request for ``amount`` of this device's capacity."""
        return {self.key: amount}

    def fits(self, *amounts: str) -> bool:
        """Whether ``amounts`` together stay within the capacity's value."""
        return sum(quantity(a) for a in amounts) <= quantity(self.value)


def amounts(value: str, policy: dict | None) -> tuple[Decimal, Decimal]:
    """``(small, large)`` request amounts the policy takes unchanged: the smallest and largest valid values
    (``validValues``), ``min`` and the largest ``min + k*step`` (or ``max``) within ``value`` (``validRange``),
    the ``default`` twice (only a default), or a quarter and all of ``value`` (no policy)."""
    total = quantity(value)
    policy = policy or {}
    if policy.get("validValues"):
        valid = sorted(quantity(v) for v in policy["validValues"] if quantity(v) <= total)
        return (valid[0], valid[-1]) if valid else (total, total)
    if policy.get("validRange"):
        low = quantity(policy["validRange"]["min"])
        high = min(total, quantity(policy["validRange"].get("max") or value))
        step = policy["validRange"].get("step")
        if step:
            high = low + ((high - low) // quantity(step)) * quantity(step)
        return low, high
    if policy.get("default"):
        return quantity(policy["default"]), quantity(policy["default"])
    return (total / 4).to_integral_value(), total


def _text(amount: Decimal) -> str:
    return str(int(amount)) if amount == amount.to_integral_value() else str(amount)


def shared_device(driver: str, slices: list, inventory: Inventory) -> SharedDevice:
    """The first multi-allocatable device of ``driver``'s complete pools with a capacity where two ``small``
    requests fit and ``large`` + ``small`` do not. Raises LookupError with what was seen when none."""
    seen = {}
    for pool, pool_slices in complete_pools(slices).items():
        for _, d in slice_devices(pool_slices):
            if not device_body(d).get("allowMultipleAllocations"):
                continue
            name, _, capacity = device_fields(d)
            for key, cap in sorted(capacity.items()):
                value = str((cap or {}).get("value"))
                small, large = amounts(value, (cap or {}).get("requestPolicy"))
                seen[f"{pool}/{name}/{key}"] = {"value": value, "small": _text(small), "large": _text(large)}
                if 2 * small <= quantity(value) < large + small:
                    device = next(x for x in inventory.devices if x.key == (pool, name))
                    selector = inventory.selector_for(device)
                    return SharedDevice(device.node, pool, name, selector, key, value, _text(small), _text(large))
    raise LookupError(
        f"no device of {driver} sets allowMultipleAllocations with a capacity two requests can share and one "
        f"large request can fill; seen: {seen or 'none'}; published (first devices): {inventory.sample()}"
    )


ALLOCATED_ONCE = "!device.allowMultipleAllocations"  # CEL: devices without it (KEP-5075, DRAConsumableCapacity)


@dataclasses.dataclass(frozen=True)
class AllocatedOnce:
    """The devices a claim's results can each name only once: ``selector`` (a CEL expression keeping a request to
    devices without ``allowMultipleAllocations``; ``""`` when no device allows it, so no selector is needed and
    none is sent to a cluster that may lack the field) and ``per_node_max`` (the most such devices on one node)."""

    selector: str
    per_node_max: int


def allocated_once(inventory: Inventory, at_least: int = 1) -> AllocatedOnce:
    """:class:`AllocatedOnce` of ``inventory``: tests whose claim assumes one result per device (a count above a
    node's devices is unsatisfiable; a per-device unique value differs between results) keep to these devices,
    since two results of one request may name a multi-allocatable device as two shares (KEP-5075). Raises
    LookupError naming the devices when no node has ``at_least`` devices without it. Source: resource.k8s.io/v1
    Device ``allowMultipleAllocations``, CELDeviceSelector ``device.allowMultipleAllocations``; breaker s12 F8
    (ALLOC-25 skipped driver-wide) and the count-above-any-node test on consumable capacity (s12 notes)."""
    multi = [d for d in inventory.devices if d.multiple]
    if not multi:
        return AllocatedOnce("", inventory.per_node_max())
    most = max((sum(not d.multiple for d in inventory.on_node(n)) for n in inventory.nodes()), default=0)
    if most < at_least:
        shown = [f"{d.node}/{d.name}" for d in multi[:4]]
        raise LookupError(
            f"no node has {at_least} device(s) without allowMultipleAllocations (allowed on {shown}"
            f"{' ...' if len(multi) > 4 else ''}: two results of one claim may name one device)"
        )
    return AllocatedOnce(ALLOCATED_ONCE, most)


@dataclasses.dataclass(frozen=True)
class TooMany:
    """A request for more devices than exist, which the allocator proves unsatisfiable in a few steps:
    ``selectors`` (CEL, ANDed; empty: none) keep it to a few devices of each node and ``count`` is one above the
    most of them that any node has."""

    selectors: tuple[str, ...]
    count: int


def too_many(inventory: Inventory, once: AllocatedOnce, few: int = 2) -> TooMany:
    """:class:`TooMany` within the devices of ``once``: kube-scheduler's 1.34 allocator tries every order of the
    matching devices before it gives up on a count (9 of a node's 8: about 110,000 steps, seconds, past its 10 s
    DRA filter timeout under load, while 3 of 2 take 5), so a test that needs a subrequest to fail for its count
    keeps it to ``few`` devices per node: those whose value of an attribute with a different value on every
    device of a node (:meth:`Inventory.distinct_attribute`) is one of the first ``few`` such values of some node.
    Without such an attribute (or with values of two types): the whole node, count ``once.per_node_max + 1``.
    Source: resource.k8s.io/v1 ExactDeviceRequest.count; k8s.io/dynamic-resource-allocation structured allocator
    (stable, v0.34) ``allocateOne`` backtracking; KubeSchedulerConfiguration DynamicResourcesArgs.filterTimeout."""
    whole = TooMany(tuple(s for s in (once.selector,) if s), once.per_node_max + 1)
    try:
        name = inventory.distinct_attribute()
    except LookupError:
        return whole
    kept = {n: [d for d in inventory.on_node(n) if not d.multiple] for n in inventory.nodes()}
    values: list = []
    for devices in kept.values():
        values += [v for v in (d.attributes[name] for d in devices[:few]) if v not in values]
    if len({type(v) for v in values}) != 1:
        return whole
    most = max(sum(d.attributes[name] in values for d in devices) for devices in kept.values())
    return TooMany(whole.selectors + (cel_attribute_in(name, values),), most + 1)
