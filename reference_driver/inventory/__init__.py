"""Device sources behind one Protocol (:class:`Inventory`): simulated GPUs and NVML GPUs.

``load(path, node_name)`` reads the device YAML::

    source: simulated        # simulated | nvml | auto (nvml when NVML works, else simulated)
    simulated: {count: 8, productName: ..., memory: 80Gi, driverVersion: 1.2.3, partitions: 0,
                devicesPerPcieRoot: 2, allowMultipleAllocations: false, capacityRequestPolicy: {...},
                deviceNodes: true}   # each device's node /dev/dra-<name> (backed by /dev/null) through CDI
    taints: [{device: gpu-3, key: example.com/maintenance, value: v, effect: NoSchedule}]   # optional, see taints.py
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .base import Attribute, Capacity, CounterSet, Device, Inventory, InventoryError, Snapshot
from .simulated import SimulatedInventory, SimulatedSpec, parse_spec
from .taints import TaintedInventory
from .taints import parse as parse_taints

__all__ = [
    "Attribute",
    "Capacity",
    "CounterSet",
    "Device",
    "Inventory",
    "InventoryError",
    "Snapshot",
    "SimulatedInventory",
    "SimulatedSpec",
    "load",
    "from_mapping",
]

SOURCES = ("simulated", "nvml", "auto")


def from_mapping(raw: dict | None, node_name: str, where: str = "device config") -> Inventory:
    """Build the inventory from a parsed device YAML mapping. Raises InventoryError naming the bad key."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise InventoryError(f"{where}: expected a mapping at the top level")
    unknown = sorted(set(raw) - {"source", "simulated", "taints"})
    if unknown:
        raise InventoryError(f"{where}: unknown key(s) {unknown}; known keys: ['simulated', 'source', 'taints']")
    source = raw.get("source", "simulated")
    if source not in SOURCES:
        raise InventoryError(f"{where}: source {source!r} is not one of {list(SOURCES)}")
    spec = parse_spec(raw.get("simulated"), f"{where}: simulated")
    taints = parse_taints(raw.get("taints"), f"{where}: taints")
    inner: Inventory = SimulatedInventory(spec, node_name)
    if source in ("nvml", "auto"):
        from . import nvml  # noqa: PLC0415 - keeps NVML out of the simulated path

        if source == "nvml" or nvml.available():
            inner = nvml.NvmlInventory()
    if not taints:
        return inner
    tainted = TaintedInventory(inner, taints)
    tainted.snapshot()  # a taint naming no device of this node is a configuration error at start-up
    return tainted


def load(path: Path | None, node_name: str) -> Inventory:
    """Read the device YAML at ``path`` (None = defaults: 8 simulated GPUs).

    Raises InventoryError naming the file for unreadable or invalid YAML.
    """
    if path is None:
        return SimulatedInventory(SimulatedSpec(), node_name)
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InventoryError(f"device config {path}: {err}") from err
    return from_mapping(raw, node_name, where=f"device config {path}")
