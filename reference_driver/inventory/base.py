"""What an inventory yields: devices and counter sets in a driver-neutral shape, and the Protocol every
device source implements.

Attribute values are typed like the API's DeviceAttribute one-of (``int``, ``bool``, ``string``,
``version``); ``to_api`` renders the ``resource.k8s.io/v1`` ResourceSlice device entry.
Source: resource.k8s.io/v1 Device, DeviceAttribute, DeviceCapacity, CounterSet, DeviceCounterConsumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

ATTRIBUTE_KINDS = ("int", "bool", "string", "version")


@dataclass(frozen=True)
class Attribute:
    """One typed attribute value; ``kind`` is one of ATTRIBUTE_KINDS."""

    kind: str
    value: object

    def to_api(self) -> dict:
        """The DeviceAttribute JSON object, e.g. ``{"int": 0}``."""
        return {self.kind: self.value}


@dataclass(frozen=True)
class Capacity:
    """A capacity value (canonical quantity string) with an optional consumable-capacity requestPolicy."""

    value: str
    request_policy: dict | None = None

    def to_api(self) -> dict:
        """The DeviceCapacity JSON object."""
        out: dict = {"value": self.value}
        if self.request_policy:
            out["requestPolicy"] = dict(self.request_policy)
        return out


@dataclass(frozen=True)
class CounterSet:
    """A shared counter set (name is a DNS label; counters map name -> canonical quantity string)."""

    name: str
    counters: dict[str, str]

    def to_api(self) -> dict:
        """The CounterSet JSON object."""
        return {"name": self.name, "counters": {k: {"value": v} for k, v in sorted(self.counters.items())}}


TAINT_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    """A device taint (resource.k8s.io/v1 DeviceTaint, KEP-5055): ``key`` (qualified name), optional
    ``value``, ``effect`` one of TAINT_EFFECTS; the API server sets ``timeAdded``."""

    key: str
    effect: str
    value: str = ""

    def to_api(self) -> dict:
        """The DeviceTaint JSON object."""
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class Device:
    """One allocatable device of this node.

    ``env`` are extra CDI env entries for this device (``NAME=value``); ``device_nodes`` are device node paths
    injected through CDI (``/dev/nvidia0`` of a real GPU; ``/dev/dra-gpu-0`` of a simulated one);
    ``node_host`` is the host device node behind each of them ('' = the path itself; ``/dev/null`` for simulated
    GPUs, which have no device of their own); ``taints`` are published in the slice (device config
    ``taints``); ``occupies`` are the physical units (``<gpu>/slice<j>``) a
    prepared partition or whole partitionable GPU holds, never published (reference_driver/sharing.py).
    """

    name: str
    attributes: dict[str, Attribute] = field(default_factory=dict)
    capacity: dict[str, Capacity] = field(default_factory=dict)
    consumes_counters: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    allow_multiple_allocations: bool = False
    device_nodes: tuple[str, ...] = ()
    node_host: str = ""
    occupies: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()

    def to_api(self) -> dict:
        """The ResourceSlice ``spec.devices[]`` entry."""
        out: dict = {"name": self.name}
        if self.attributes:
            out["attributes"] = {k: a.to_api() for k, a in sorted(self.attributes.items())}
        if self.capacity:
            out["capacity"] = {k: c.to_api() for k, c in sorted(self.capacity.items())}
        if self.consumes_counters:
            out["consumesCounters"] = [
                {"counterSet": cs, "counters": {k: {"value": v} for k, v in counters}}
                for cs, counters in self.consumes_counters
            ]
        if self.allow_multiple_allocations:
            out["allowMultipleAllocations"] = True
        if self.taints:
            out["taints"] = [t.to_api() for t in self.taints]
        return out

    def attribute(self, name: str) -> object | None:
        """The plain value of attribute ``name`` or None."""
        attr = self.attributes.get(name)
        return attr.value if attr else None


@dataclass(frozen=True)
class Snapshot:
    """Everything one inventory offers on this node at one moment."""

    devices: tuple[Device, ...] = ()
    counter_sets: tuple[CounterSet, ...] = ()

    def device(self, name: str) -> Device | None:
        """The device called ``name`` or None."""
        return next((d for d in self.devices if d.name == name), None)


@runtime_checkable
class Inventory(Protocol):
    """A source of devices for this node (simulated GPUs, NVML GPUs)."""

    kind: str

    def snapshot(self) -> Snapshot:
        """Current devices and counter sets. Raises InventoryError when the source cannot be read."""


class InventoryError(RuntimeError):
    """The device source could not be read or configured; the message names the source and the fix."""
