"""Fault ``device-by-position``: a driver that finds a claim's devices by their position in the allocation
instead of by name, as one that walks the results and uses the loop index as the hardware index.

The claim's k-th allocated device is prepared (CDI spec, CDI ID, the answer to the kubelet) as the node's k-th
device in name order. That is right whenever the allocator hands out a node's first free devices in order
(one device on an idle node: ``gpu-0``; every device: all of them) and wrong for a claim holding any other
device, so which tests see it depends on which devices are free when they run (breaker finding 3: device
shards change that). Source: driver contract, prepared devices are the allocation results (KEP-4381).
"""

from __future__ import annotations

from dataclasses import replace

from .claims import AllocatedDevice
from .inventory.base import Device, Snapshot


def by_position(
    pairs: list[tuple[AllocatedDevice, Device | None]], snap: Snapshot, on: bool
) -> list[tuple[AllocatedDevice, Device | None]]:
    """``pairs`` (allocation, device) unchanged, or with ``on`` the k-th renamed to the node's k-th device in
    name order (wrapping when the claim holds more entries than the node has devices, e.g. shares)."""
    ordered = sorted(snap.devices, key=lambda d: d.name) if on else []
    if not ordered:
        return pairs
    nth = [ordered[k % len(ordered)] for k in range(len(pairs))]
    return [(replace(alloc, device=dev.name), dev) for (alloc, _), dev in zip(pairs, nth, strict=True)]
