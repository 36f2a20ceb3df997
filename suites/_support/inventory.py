"""The driver's devices as published in its ResourceSlices, for recomputing allocation rules from the slices
instead of trusting the allocation (constraints, selectors, counts).

Source: resource.k8s.io/v1 ResourceSlice ``spec.devices[].attributes`` / ``capacity`` (KEP-4381); attribute
names are qualified with the driver's domain when unprefixed (dra-protocols.md §5.3).
Belongs in: conformance/k8s/discovery.py (next to ``devices_of``).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

from conformance.api import waits


@dataclasses.dataclass(frozen=True)
class Device:
    """One published device: ``node`` ("" for non-node-local), ``pool``, ``name``, ``attributes`` and
    ``capacity`` keyed by fully-qualified name (attribute values unwrapped: int, bool, str, version str)."""

    node: str
    pool: str
    name: str
    attributes: dict
    capacity: dict
    types: dict = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.pool, self.name


class Inventory:
    """All devices of one driver from its complete pools (highest generation)."""

    def __init__(self, driver: str, devices: Iterable[Device]) -> None:
        self.driver = driver
        self.devices = list(devices)
        self._by_key = {d.key: d for d in self.devices}

    @classmethod
    def read(cls, k8s, driver: str) -> "Inventory":
        """The driver's devices right now (slices listed with ``spec.driver=<driver>``)."""
        slices = k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}")
        devices = []
        for pool_slices in waits.complete_pools(slices).values():
            for s in pool_slices:
                for d in s.get("spec.devices") or []:
                    body = d.get("basic") or d
                    attrs = {_qualify(driver, k): next(iter(v.values())) for k, v in
                             (body.get("attributes") or {}).items() if isinstance(v, dict) and v}
                    types = {_qualify(driver, k): next(iter(v)) for k, v in (body.get("attributes") or {}).items()
                             if isinstance(v, dict) and v}
                    cap = {_qualify(driver, k): (v or {}).get("value") for k, v in (body.get("capacity") or {}).items()}
                    devices.append(Device(s.get("spec.nodeName") or "", s.get("spec.pool.name"), d.get("name"),
                                          attrs, cap, types))
        return cls(driver, devices)

    def of(self, result) -> Device:
        """The device an allocation result (``driver``/``pool``/``device``) names; KeyError if unpublished."""
        return self._by_key[(result.pool, result.device)]

    def on_node(self, node: str) -> list[Device]:
        """Devices published for ``node``."""
        return [d for d in self.devices if d.node == node]

    def nodes(self) -> list[str]:
        """Nodes with at least one device, sorted."""
        return sorted({d.node for d in self.devices if d.node})

    def per_node_min(self) -> int:
        """The smallest number of devices any driver node has (0 when none)."""
        return min((len(self.on_node(n)) for n in self.nodes()), default=0)

    def shared_attribute(self, *, min_group: int = 2) -> tuple[str, object]:
        """An attribute name and value that at least ``min_group`` devices of one node share (for
        matchAttribute); raises LookupError when the inventory has none."""
        for node in self.nodes():
            counts: dict[tuple[str, object], int] = {}
            for d in self.on_node(node):
                for k, v in d.attributes.items():
                    if d.types.get(k) not in ("string", "int"):
                        continue
                    counts[(k, v)] = counts.get((k, v), 0) + 1
            for (k, v), n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
                if n >= min_group and isinstance(v, (str, int)) and not isinstance(v, bool):
                    return k, v
        raise LookupError(f"no attribute is shared by {min_group} devices of one node of {self.driver}")

    def grouping_attribute(self) -> str:
        """A string/int attribute that, on some node, several devices share while others differ (so both
        matchAttribute and distinctAttribute can be satisfied and violated); raises LookupError when none."""
        for node in self.nodes():
            devices = self.on_node(node)
            names = set.intersection(*[set(d.attributes) for d in devices])
            for name in sorted(names):
                if any(d.types.get(name) not in ("string", "int") for d in devices):
                    continue
                values = [d.attributes[name] for d in devices]
                if 1 < len(set(values)) < len(values):
                    return name
        raise LookupError(f"no attribute of {self.driver} groups devices (shared by some, not all, on one node)")

    def distinct_attribute(self) -> str:
        """An attribute whose values differ between the devices of every node (for distinctAttribute, e.g. a
        UUID or index); raises LookupError when none."""
        names = set.intersection(*[set(d.attributes) for d in self.devices]) if self.devices else set()
        for name in sorted(names):
            if any(d.types.get(name) not in ("string", "int") for d in self.devices):
                continue
            if all(len({d.attributes[name] for d in self.on_node(n)}) == len(self.on_node(n)) for n in self.nodes()):
                return name
        raise LookupError(f"no attribute has distinct values per node for {self.driver}")

    def largest_capacity(self) -> tuple[str, str]:
        """A capacity every device publishes and its largest published value (as the slice wrote it) whose
        device is unique in having it; raises LookupError when no capacity qualifies."""
        from kubernetes.utils.quantity import parse_quantity  # noqa: PLC0415

        common = set.intersection(*[set(d.capacity) for d in self.devices]) if self.devices else set()
        for name in sorted(common):
            best = max(self.devices, key=lambda d: parse_quantity(d.capacity[name]))
            return name, best.capacity[name]
        raise LookupError(f"no capacity is published by every device of {self.driver}")

    def numeric_attribute(self) -> str:
        """An int attribute every device has (for CEL selectors); raises LookupError when none."""
        for name in sorted(set.intersection(*[set(d.attributes) for d in self.devices]) if self.devices else set()):
            if all(d.types.get(name) == "int" for d in self.devices):
                return name
        raise LookupError(f"no int attribute on every device of {self.driver}")


def _qualify(driver: str, name: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def cel_attribute(qualified: str) -> str:
    """CEL access for a qualified attribute: ``device.attributes["<domain>"].<id>``."""
    domain, ident = qualified.rsplit("/", 1)
    return f'device.attributes["{domain}"].{ident}'


def cel_literal(value) -> str:
    """A CEL literal for an attribute value (str quoted, int as is)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
