"""Device taints from the ``taints:`` section of the device YAML, published on named devices of any inventory.

Off by default (no section, no taint)::

    taints:
      - device: gpu-3                               # a device name of this node's inventory
        key: gpu.dra-conformance.test/maintenance   # a qualified name (optional prefix / name)
        value: scheduled                            # optional, a label value
        effect: NoSchedule                          # NoSchedule | NoExecute

A driver publishes a taint for a device it knows is unusable (maintenance, failing health); the scheduler then
keeps claims without a matching toleration off it, and NoExecute evicts pods already using it.
Source: resource.k8s.io/v1 ResourceSlice ``spec.devices[].taints`` (DeviceTaint: key, value, effect,
timeAdded), KEP-5055 "DRA: device taints and tolerations"; label-value and qualified-name validation of
k8s.io/apimachinery (the API server refuses other values).
"""

from __future__ import annotations

import dataclasses
import re

from .base import TAINT_EFFECTS, Inventory, InventoryError, Snapshot, Taint

_KEYS = {"device", "key", "value", "effect"}
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_QUALIFIED = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")


def parse(raw: object, where: str = "taints") -> tuple[tuple[str, Taint], ...]:
    """Validate the ``taints:`` list; ``((device name, Taint), ...)``. Raises InventoryError naming the
    entry and the accepted form."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InventoryError(f"device config {where}: expected a list of {{device, key, value, effect}}")
    out = []
    for i, item in enumerate(raw):
        at = f"device config {where}[{i}]"
        if not isinstance(item, dict) or set(item) - _KEYS or not {"device", "key", "effect"} <= set(item):
            raise InventoryError(f"{at}: expected a mapping with device, key, effect and optionally value")
        key, value, effect = str(item["key"]), str(item.get("value") or ""), item["effect"]
        if not _QUALIFIED.match(key) or len(key.rsplit("/", 1)[-1]) > 63 or len(key) > 316:
            raise InventoryError(f"{at}.key: {key!r} is not a qualified name, e.g. example.com/maintenance")
        if not _VALUE.match(value):
            raise InventoryError(f"{at}.value: {value!r} is not a label value (at most 63 alphanumerics, -_.)")
        if effect not in TAINT_EFFECTS:
            raise InventoryError(f"{at}.effect: {effect!r} is not one of {list(TAINT_EFFECTS)}")
        out.append((str(item["device"]), Taint(key, effect, value)))
    return tuple(out)


class TaintedInventory:
    """``inner``'s devices with the configured taints added (same ``kind``). Raises InventoryError from
    ``snapshot()`` when a taint names a device the inventory does not have."""

    def __init__(self, inner: Inventory, taints: tuple[tuple[str, Taint], ...]) -> None:
        self.inner, self.taints, self.kind = inner, taints, inner.kind

    def snapshot(self) -> Snapshot:
        """The inner snapshot, each named device carrying its taints in configured order."""
        snap = self.inner.snapshot()
        names = {d.name for d in snap.devices}
        unknown = sorted({dev for dev, _ in self.taints} - names)
        if unknown:
            raise InventoryError(f"device config taints: no device {unknown} on this node; devices: {sorted(names)}")
        devices = tuple(
            dataclasses.replace(d, taints=d.taints + tuple(t for dev, t in self.taints if dev == d.name))
            for d in snap.devices
        )
        return dataclasses.replace(snap, devices=devices)
