"""Fault ``device-config-sticks``: a device keeps the opaque config of the last claim prepared on it with one.

A later claim of that device that carries no config of this driver is prepared with the remembered config and
its sources, like a GPU whose sharing mode is never reset between claims. A healthy driver applies to each
claim only its own (and its class's) config (KEP-4381; resource.k8s.io/v1 DeviceAllocationConfiguration).
"""

from __future__ import annotations

from dataclasses import replace

from .claims import AllocatedDevice
from .opaque import GpuConfig

# device name -> (config, config sources) of the last claim prepared on it with a config of this driver
Remembered = dict[str, tuple[GpuConfig, tuple[str, ...]]]


def stick(pairs: list[tuple[AllocatedDevice, object]], last: Remembered) -> list[tuple[AllocatedDevice, object]]:
    """``(allocation, device)`` pairs with the fault applied: an allocation with config sources is remembered in
    ``last`` (updated in place, keyed by device name on this node); one without gets the device's remembered
    config and sources, when there are any."""
    for alloc, _ in pairs:
        if alloc.config_sources:
            last[alloc.device] = (alloc.config, alloc.config_sources)
    return [(_remembered(alloc, last), device) for alloc, device in pairs]


def _remembered(alloc: AllocatedDevice, last: Remembered) -> AllocatedDevice:
    if alloc.config_sources or alloc.device not in last:
        return alloc
    config, sources = last[alloc.device]
    return replace(alloc, config=config, config_sources=sources)
