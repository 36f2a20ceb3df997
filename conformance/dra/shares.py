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

from conformance.dra.cel import cel_attribute, cel_literal
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


def allocated_once(inventory: Inventory, attribute: str) -> str:
    """A CEL selector (``""`` when no device allows multiple allocations) matching the devices published
    without ``allowMultipleAllocations`` by their values of ``attribute`` (a qualified string/int attribute
    distinct per node), so that two results of one claim name two devices, never two shares of one (KEP-5075).
    Raises LookupError naming the devices when no node has two such devices, or when a value of them is also a
    multi-allocatable device's (the selector would match it). Source: resource.k8s.io/v1 Device
    ``allowMultipleAllocations``; breaker s12 F8 (ALLOC-25 on a driver with some multi-allocatable devices)."""
    multi = [d for d in inventory.devices if d.multiple]
    if not multi:
        return ""
    once = [d for d in inventory.devices if not d.multiple and attribute in d.attributes]
    per_node = {n: sum(d.node == n for d in once) for n in {d.node for d in once}}
    if max(per_node.values(), default=0) < 2:
        shown = [f"{d.node}/{d.name}" for d in multi[:4]]
        raise LookupError(f"no node has two devices without allowMultipleAllocations (allowed on {shown} ...)")
    values = sorted({d.attributes[attribute] for d in once}, key=str)
    shared = sorted(d.name for d in multi if d.attributes.get(attribute) in values)
    if shared:
        raise LookupError(f"{attribute} values of devices allocated once are also those of {shared[:4]}")
    return f"{cel_attribute(attribute)} in [{', '.join(cel_literal(v) for v in values)}]"
