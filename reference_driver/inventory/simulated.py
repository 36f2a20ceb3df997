"""Simulated GPUs from the ``simulated:`` section of the device YAML: count, model, memory, uuid, index,
driverVersion, pcieRoot; optional partitions through shared counters; optional allowMultipleAllocations
with a capacity requestPolicy.

UUIDs are derived from the node name and index (uuid5), so a restarted plugin publishes identical devices.
Sources: resource.k8s.io/v1 Device/CounterSet (KEP-4815 partitionable devices, KEP-5075 consumable
capacity); dra-example-driver's GPU profile for the attribute set.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from .. import quantities
from .base import Attribute, Capacity, CounterSet, Device, InventoryError, Snapshot

_KEYS = {
    "count",
    "productName",
    "memory",
    "driverVersion",
    "devicesPerPcieRoot",
    "partitions",
    "allowMultipleAllocations",
    "capacityRequestPolicy",
    "architecture",
}
_POLICY_KEYS = {"default", "min", "max", "step"}
_NAMESPACE = uuid.UUID("6f1d2b1e-8a43-4c55-9d0e-6b2f3d0e9a10")
MAX_PARTITIONS = 8


@dataclass(frozen=True)
class SimulatedSpec:
    """Validated ``simulated:`` section (memory in bytes)."""

    count: int = 4
    product_name: str = "DRA Conformance GPU 80GB"
    architecture: str = "Simulated"
    memory: int = 80 * 2**30
    driver_version: str = "1.2.3"
    devices_per_pcie_root: int = 2
    partitions: int = 0
    allow_multiple_allocations: bool = False
    request_policy: dict | None = None


def _fail(where: str, msg: str) -> InventoryError:
    return InventoryError(f"device config {where}: {msg}")


def parse_spec(raw: dict | None, where: str = "simulated") -> SimulatedSpec:
    """Validate the ``simulated:`` mapping. Raises InventoryError naming the key and the accepted values."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise _fail(where, f"expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise _fail(where, f"unknown key(s) {unknown}; known keys: {sorted(_KEYS)}")
    count = raw.get("count", 4)
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 1024:
        raise _fail(f"{where}.count", f"{count!r}: expected an integer 0..1024")
    parts = raw.get("partitions", 0)
    if not isinstance(parts, int) or isinstance(parts, bool) or not 0 <= parts <= MAX_PARTITIONS:
        raise _fail(f"{where}.partitions", f"{parts!r}: expected an integer 0..{MAX_PARTITIONS} (0 = none)")
    per_root = raw.get("devicesPerPcieRoot", 2)
    if not isinstance(per_root, int) or isinstance(per_root, bool) or per_root < 1:
        raise _fail(f"{where}.devicesPerPcieRoot", f"{per_root!r}: expected a positive integer")
    try:
        memory = quantities.parse(raw.get("memory", "80Gi"))
    except ValueError as err:
        raise _fail(f"{where}.memory", str(err)) from None
    version = str(raw.get("driverVersion", "1.2.3"))
    if not _is_semver(version):
        raise _fail(f"{where}.driverVersion", f"{version!r}: expected semver MAJOR.MINOR.PATCH, e.g. 1.2.3")
    multi = raw.get("allowMultipleAllocations", False)
    if not isinstance(multi, bool):
        raise _fail(f"{where}.allowMultipleAllocations", f"{multi!r}: expected true or false")
    policy = _parse_policy(raw.get("capacityRequestPolicy"), f"{where}.capacityRequestPolicy", multi)
    name = str(raw.get("productName", SimulatedSpec.product_name))
    if len(name) > 64:
        raise _fail(f"{where}.productName", "must be at most 64 characters (string attribute limit)")
    return SimulatedSpec(
        count=count,
        product_name=name,
        architecture=str(raw.get("architecture", "Simulated")),
        memory=memory,
        driver_version=version,
        devices_per_pcie_root=per_root,
        partitions=parts,
        allow_multiple_allocations=multi,
        request_policy=policy,
    )


def _parse_policy(raw: object, where: str, multi: bool) -> dict | None:
    if raw is None:
        return None
    if not multi:
        raise _fail(where, "a capacity requestPolicy needs allowMultipleAllocations: true")
    if not isinstance(raw, dict) or set(raw) - _POLICY_KEYS or "default" not in raw:
        raise _fail(where, f"expected a mapping with 'default' and optionally {sorted(_POLICY_KEYS - {'default'})}")
    try:
        values = {k: quantities.parse(v) for k, v in raw.items()}
    except ValueError as err:
        raise _fail(where, str(err)) from None
    policy: dict = {"default": quantities.canonical(values["default"])}
    if "min" in values:
        policy["validRange"] = {"min": quantities.canonical(values["min"])}
        for key in ("max", "step"):
            if key in values:
                policy["validRange"][key] = quantities.canonical(values[key])
    elif {"max", "step"} & values.keys():
        raise _fail(where, "'max' and 'step' need 'min' (validRange.min is required)")
    return policy


def _is_semver(text: str) -> bool:
    core = text.split("-", 1)[0].split("+", 1)[0].split(".")
    return len(core) == 3 and all(p.isdigit() and (p == "0" or not p.startswith("0")) for p in core)


class SimulatedInventory:
    """Simulated GPUs of one node. ``snapshot()`` is deterministic for (spec, node_name)."""

    kind = "simulated"

    def __init__(self, spec: SimulatedSpec, node_name: str) -> None:
        self.spec = spec
        self.node_name = node_name

    def snapshot(self) -> Snapshot:
        """Devices ``gpu-<i>`` (plus ``gpu-<i>-part-<j>`` and counter sets ``gpu-<i>-counters`` with partitions)."""
        devices: list[Device] = []
        counter_sets: list[CounterSet] = []
        spec = self.spec
        for index in range(spec.count):
            base = self._attributes(index)
            memory = quantities.canonical(spec.memory)
            capacity = {"memory": Capacity(memory, spec.request_policy if spec.allow_multiple_allocations else None)}
            if not spec.partitions:
                devices.append(
                    Device(
                        name=f"gpu-{index}",
                        attributes=base,
                        capacity=capacity,
                        allow_multiple_allocations=spec.allow_multiple_allocations,
                    )
                )
                continue
            counters = f"gpu-{index}-counters"
            counter_sets.append(CounterSet(counters, {"memory": memory, "slices": str(spec.partitions)}))
            whole = ((counters, (("memory", memory), ("slices", str(spec.partitions)))),)
            devices.append(
                Device(
                    name=f"gpu-{index}",
                    attributes={**base, "partition": Attribute("bool", False)},
                    capacity={"memory": Capacity(memory)},
                    consumes_counters=whole,
                )
            )
            part_mem = quantities.canonical(spec.memory // spec.partitions)
            for part in range(spec.partitions):
                attrs = {**base, "partition": Attribute("bool", True), "partitionIndex": Attribute("int", part)}
                devices.append(
                    Device(
                        name=f"gpu-{index}-part-{part}",
                        attributes=attrs,
                        capacity={"memory": Capacity(part_mem)},
                        consumes_counters=((counters, (("memory", part_mem), ("slices", "1"))),),
                    )
                )
        return Snapshot(devices=tuple(devices), counter_sets=tuple(counter_sets))

    def _attributes(self, index: int) -> dict[str, Attribute]:
        spec = self.spec
        root = index // spec.devices_per_pcie_root
        return {
            "type": Attribute("string", "gpu"),
            "index": Attribute("int", index),
            "uuid": Attribute("string", "GPU-" + str(uuid.uuid5(_NAMESPACE, f"{self.node_name}/{index}"))),
            "model": Attribute("string", spec.product_name),
            "productName": Attribute("string", spec.product_name),
            "architecture": Attribute("string", spec.architecture),
            "driverVersion": Attribute("version", spec.driver_version),
            "resource.kubernetes.io/pcieRoot": Attribute("string", f"pci{root // 256:04x}:{root % 256:02x}"),
            "resource.kubernetes.io/pciBusID": Attribute("string", f"{index // 256:04x}:{index % 256:02x}:00.0"),
        }
