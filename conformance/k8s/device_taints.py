"""Which published device a device-taint test taints or tolerates, and how a claim asks for exactly it.

A :class:`TaintTarget` names one device (node, pool, device: what a DeviceTaintRule's ``deviceSelector`` and an
allocation result name), a CEL selector that, with the pod pinned to the node, matches only that device (an
attribute whose values differ between the node's devices), the node's other devices without taints, and the
taints the driver itself publishes on it. Pure: reads an :class:`~conformance.k8s.inventory.Inventory`.

Sources: resource.k8s.io/v1 ResourceSlice ``devices[].taints`` and DeviceTaintRule ``spec.deviceSelector``
(driver, pool, device), DeviceRequestAllocationResult ``tolerations`` (KEP-5055).
"""

from __future__ import annotations

import dataclasses

from .inventory import Device, Inventory, cel_attribute, cel_literal


@dataclasses.dataclass(frozen=True)
class TaintTarget:
    """One device of ``node``: ``pool``/``name``, ``selector`` (CEL matching only it among the node's devices),
    ``others`` (names of the node's other devices without published taints) and ``taints`` (its published
    DeviceTaint dicts)."""

    node: str
    pool: str
    name: str
    selector: str
    others: tuple[str, ...]
    taints: tuple[dict, ...] = ()


def _target(inventory: Inventory, device: Device, attribute: str) -> TaintTarget:
    value = device.attributes[attribute]
    others = tuple(d.name for d in inventory.on_node(device.node) if d.name != device.name and not d.taints)
    selector = f"{cel_attribute(attribute)} == {cel_literal(value)}"
    return TaintTarget(device.node, device.pool, device.name, selector, others, tuple(device.taints))


def untainted(inventory: Inventory, attribute: str) -> TaintTarget:
    """The first device without published taints on a node where at least one other such device remains
    (so a test can show the node still allocates). ``attribute``: qualified, distinct per node. Raises
    LookupError naming the devices with taints per node when none fits."""
    for node in inventory.nodes():
        free = [d for d in inventory.on_node(node) if not d.taints]
        if len(free) >= 2:
            return _target(inventory, free[0], attribute)
    raise LookupError(f"no node of {inventory.driver} has two devices without taints; {_tainted(inventory)}")


def published(inventory: Inventory, attribute: str) -> TaintTarget:
    """The first device the driver publishes with a taint (effect NoSchedule or NoExecute). Raises
    LookupError when the driver publishes none."""
    for device in inventory.devices:
        if device.node and any(t.get("effect") in ("NoSchedule", "NoExecute") for t in device.taints):
            return _target(inventory, device, attribute)
    raise LookupError(
        f"{inventory.driver} publishes no device with a NoSchedule or NoExecute taint; {_tainted(inventory)}"
    )


def _tainted(inventory: Inventory) -> str:
    seen = {f"{d.node}/{d.name}": [t.get("effect") for t in d.taints] for d in inventory.devices if d.taints}
    return f"devices with taints: {seen or 'none'}"
