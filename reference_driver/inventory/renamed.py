"""The fault ``renamed-after-unprepare``: devices come back under a new name once a claim using them is
unprepared, as a driver does that names devices after a reset counter or re-enumerates them after a reset.

A DeviceTaintRule (and an admin's or scheduler's view of "device gpu-0") names devices by driver, pool and
name; a device republished under another name escapes the rules naming it, so a device taken out of service
is handed out again. The healthy driver keeps device names stable (resource.k8s.io/v1 Device.name "must be
unique in the pool"; KEP-5055 DeviceTaintSelector.device).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable

from .base import Snapshot


class RenamingSnapshot:
    """Wraps ``snapshot``: after :meth:`rename`, each named device is published as ``<name>-reset-<n>``
    (``n`` counts the renames), attributes unchanged. ``on_rename`` (e.g. an immediate slice sync) runs
    after every rename that changed a name."""

    def __init__(self, snapshot: Callable[[], Snapshot], on_rename: Callable[[], None] = lambda: None) -> None:
        self._snapshot, self.on_rename = snapshot, on_rename
        self._lock = threading.Lock()
        self._names: dict[str, str] = {}  # original name -> published name
        self._count = 0

    def __call__(self) -> Snapshot:
        """The inner snapshot with the renamed devices' new names."""
        snap = self._snapshot()
        with self._lock:
            names = dict(self._names)
        devices = tuple(dataclasses.replace(d, name=names.get(d.name, d.name)) for d in snap.devices)
        return dataclasses.replace(snap, devices=devices)

    def rename(self, published: Iterable[str]) -> None:
        """Give each device now published as one of ``published`` a new name."""
        changed = False
        with self._lock:
            current = {new: old for old, new in self._names.items()}
            for name in published:
                self._count += 1
                self._names[current.get(name, name)] = f"{current.get(name, name)}-reset-{self._count}"
                changed = True
        if changed:
            self.on_rename()
