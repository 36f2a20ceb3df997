"""The driver's writes to ResourceClaim ``status.devices``: device status after NodePrepareResources
(``--device-status``, KEP-4817) and the binding-conditions controller loop (``--binding-conditions``,
KEP-5007). Both are off by default.

No kubernetes import: ``writer`` is a :class:`~reference_driver.kube.ClaimStatusWriter` (or a fake with
``update_devices(namespace, name, uid, edit)`` and ``list_all()``). Faults: ``no-device-status``,
``partial-device-status``, ``binding-never-ready``, ``binding-failure-unreported``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from . import devicestatus
from .claims import ClaimRef
from .faults import Faults

log = logging.getLogger(__name__)
BINDING_POLL_S = 1.0  # seconds between two scans of the cluster's claims for pending binding conditions


def utc_now() -> str:
    """The current time as a metav1.Time string (RFC 3339, seconds, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class DeviceStatusReporter:
    """``after_prepare(ref, devices)``: writes the prepared devices' ``status.devices`` entries. A failed
    write is logged, never turned into a prepare error (the devices are prepared; the status is informative)."""

    def __init__(self, writer, driver: str, faults: Faults = Faults(), now: Callable[[], str] = utc_now) -> None:
        self.writer, self.driver, self.faults, self.now = writer, driver, faults, now

    def __call__(self, ref: ClaimRef, devices: Sequence) -> bool:
        """Write the entries of ``devices`` (PreparedDevice) into claim ``ref``; True when written."""
        if self.faults.on("no-device-status") or not devices:
            return False
        if self.faults.on("partial-device-status"):
            devices = list(devices)[:1]
        updates = devicestatus.prepared_entries(self.driver, devices, self.now())

        def edit(current: list[dict]) -> list[dict] | None:
            new = devicestatus.merged(current, updates)
            return None if devicestatus.unchanged(current, new) else new

        try:
            written = self.writer.update_devices(ref.namespace, ref.name, ref.uid, edit)
        except Exception as err:  # noqa: BLE001 - status is best effort; prepare already succeeded
            log.warning("device status of %s not written: %s", ref, err)
            return False
        log.info("device status of %s: %d device(s)%s", ref, len(updates), "" if written else " (unchanged)")
        return written


class BindingController:
    """Sets the binding conditions of this node's allocated devices True (KEP-5007): scans every claim each
    :data:`BINDING_POLL_S` seconds for results of ``driver`` in ``pool`` whose ``bindingConditions`` are not
    True yet in ``status.devices``, and writes them. A device named in ``failing`` (its attach fails) gets its
    ``bindingFailureConditions`` set True instead, once per allocation (the scheduler then releases the
    allocation and clears ``status.devices``). Faults: ``binding-never-ready`` (never writes),
    ``binding-failure-unreported`` (a failing device is reported attached)."""

    def __init__(
        self,
        writer,
        driver: str,
        pool: str,
        faults: Faults = Faults(),
        now: Callable[[], str] = utc_now,
        failing: frozenset[str] = frozenset(),
    ) -> None:
        self.writer, self.driver, self.pool, self.faults, self.now = writer, driver, pool, faults, now
        self.failing = frozenset() if faults.on("binding-failure-unreported") else frozenset(failing)
        self._stop = threading.Event()

    def entries(self, pending: list[dict]) -> list[dict]:
        """The ``status.devices`` updates for ``pending`` results: failure conditions True for the devices in
        ``failing``, binding conditions True for the others."""
        now = self.now()
        fails = [r for r in pending if r.get("device") in self.failing]
        oks = [r for r in pending if r.get("device") not in self.failing]
        return devicestatus.binding_entries(oks, now) + devicestatus.binding_entries(fails, now, attached=False)

    def sync(self) -> int:
        """One scan; the number of claims written. Raises the writer's API errors for the listing."""
        if self.faults.on("binding-never-ready"):
            return 0
        written = 0
        for claim in self.writer.list_all():
            if not devicestatus.binding_pending(claim, self.driver, self.pool):
                continue
            meta, status = claim["metadata"], claim.get("status") or {}

            def edit(current: list[dict], meta=meta, status=status) -> list[dict] | None:
                fresh = {"metadata": meta, "status": {**status, "devices": current}}
                pending = devicestatus.binding_pending(fresh, self.driver, self.pool)
                if not pending:
                    return None
                new = devicestatus.merged(current, self.entries(pending))
                return None if devicestatus.unchanged(current, new) else new

            try:
                if self.writer.update_devices(meta["namespace"], meta["name"], meta["uid"], edit):
                    written += 1
                    log.info("binding conditions of %s/%s written", meta["namespace"], meta["name"])
            except Exception as err:  # noqa: BLE001 - next scan retries
                log.warning("binding conditions of %s/%s not written: %s", meta["namespace"], meta["name"], err)
        return written

    def run(self) -> None:
        """Scan until :meth:`stop`."""
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as err:  # noqa: BLE001 - API unreachable: keep going
                log.warning("binding scan failed: %s", err)
            self._stop.wait(BINDING_POLL_S)

    def stop(self) -> None:
        """Ask :meth:`run` to return."""
        self._stop.set()
