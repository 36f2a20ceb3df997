"""Which published device a device-taint test taints or tolerates, and how a claim asks for exactly it.

A :class:`TaintTarget` names one device (node, pool, device: what a DeviceTaintRule's ``deviceSelector`` and an
allocation result name), a CEL selector that, with the pod pinned to the node, matches only that device (an
attribute whose values differ between the node's devices), the node's other devices without taints, and the
taints the driver itself publishes on it; and when the device taint eviction controller evicted a pod, against
when a rule's taint says it should (:func:`eviction_delay`). Pure: reads an
:class:`~conformance.dra.inventory.Inventory` or API objects.

Sources: resource.k8s.io/v1 ResourceSlice ``devices[].taints`` and DeviceTaintRule ``spec.deviceSelector``
(driver, pool, device), DeviceRequestAllocationResult ``tolerations`` (KEP-5055).
"""

from __future__ import annotations

import dataclasses
import datetime

from conformance.core.objects import Obj
from conformance.dra.cel import cel_attribute, cel_literal
from conformance.dra.claimstatus import api_second
from conformance.dra.inventory import Device, Inventory

# kube-controller-manager device taint eviction controller: the DisruptionTarget condition it writes on a pod
# before deleting it (pkg/controller/devicetainteviction, addConditionAndDeletePod; 1.34 to 1.37)
EVICTION_REASON = "DeletionByDeviceTaintManager"


@dataclasses.dataclass(frozen=True)
class TaintTarget:
    """One device of ``node``: ``pool``/``name``, ``selector`` (CEL matching only it among the node's devices),
    ``others`` (names of the node's other devices without published taints that can be allocated together with
    it), ``taints`` (its published DeviceTaint dicts) and ``group`` (CEL selector of those devices, None: every
    device; :meth:`Inventory.together`, so partitions sharing counters never make a claim for all of ``others``
    unsatisfiable)."""

    node: str
    pool: str
    name: str
    selector: str
    others: tuple[str, ...]
    taints: tuple[dict, ...] = ()
    group: str | None = None


def _target(
    inventory: Inventory, device: Device, attribute: str, among: list[Device] | None = None, group: str | None = None
) -> TaintTarget:
    value = device.attributes[attribute]
    pool = inventory.on_node(device.node) if among is None else among
    others = tuple(d.name for d in pool if d.name != device.name and not d.taints)
    selector = f"{cel_attribute(attribute)} == {cel_literal(value)}"
    return TaintTarget(device.node, device.pool, device.name, selector, others, tuple(device.taints), group)


def untainted(inventory: Inventory, attribute: str) -> TaintTarget:
    """The first device without published taints on a node where at least one other such device remains
    (so a test can show the node still allocates), among the devices that can be allocated together
    (:meth:`Inventory.together`: every device unless they consume shared counters; found by the full profile on
    partitions + taints, where a claim for all the other devices never fitted). ``attribute``: qualified,
    distinct per node. Raises LookupError naming the devices with taints per node when none fits."""
    try:
        together = inventory.together()
    except LookupError:  # no group fits together: every device, as before counters
        together = None
    for node in inventory.nodes():
        group = inventory.on_node(node) if together is None else together.by_node.get(node, [])
        free = [d for d in group if not d.taints]
        if len(free) >= 2:
            return _target(inventory, free[0], attribute, free, together.selector if together else None)
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


def eviction_condition(pod: Obj | None) -> dict | None:
    """The DisruptionTarget condition (status True, reason :data:`EVICTION_REASON`) the device taint eviction
    controller wrote on ``pod``, or None (no pod, no such condition)."""
    for cond in (pod.get("status.conditions") if pod is not None else None) or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            if cond.get("reason") == EVICTION_REASON:
                return cond
    return None


def eviction_delay(rule: Obj, pod: Obj, toleration_seconds: int) -> tuple[float, str]:
    """``(seconds, evidence)``: how long after it was due the device taint eviction controller started evicting
    ``pod`` (negative: before): the ``lastTransitionTime`` of its DisruptionTarget condition
    (:func:`eviction_condition`) minus (the DeviceTaintRule ``rule``'s ``spec.taint.timeAdded``, which the API
    server sets at creation, plus ``toleration_seconds``). Both are cluster clocks at one-second resolution (the
    API server's and kube-controller-manager's), never this process's, so the result does not depend on how
    fast the test ran. Raises LookupError naming what is missing (no timeAdded, no eviction condition) and
    ValueError for an unparsable time. Source: resource.k8s.io DeviceTaint.timeAdded, DeviceToleration
    .tolerationSeconds (KEP-5055: eviction at timeAdded + tolerationSeconds)."""
    added, cond = rule.get("spec.taint.timeAdded"), eviction_condition(pod)
    if not added:
        raise LookupError(f"DeviceTaintRule {rule.name} has no spec.taint.timeAdded (the API server sets it)")
    if cond is None:
        raise LookupError(f"pod {pod.namespace}/{pod.name} has no DisruptionTarget condition ({EVICTION_REASON})")
    start, when = api_second(added), api_second(cond.get("lastTransitionTime") or "")
    if start is None or when is None:
        raise ValueError(f"unparsable time: timeAdded {added!r}, lastTransitionTime {cond.get('lastTransitionTime')!r}")
    due = start + datetime.timedelta(seconds=toleration_seconds)
    late = (when - due).total_seconds()
    return late, (
        f"taint timeAdded {added} + tolerationSeconds {toleration_seconds} = due at "
        f"{due.isoformat()}; the device taint eviction controller marked pod {pod.name} for deletion at "
        f"{cond.get('lastTransitionTime')} ({late:+.0f} s)"
    )
