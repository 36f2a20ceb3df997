"""ResourceClaim ``status.devices`` entries (KEP-4817) and binding conditions (KEP-5007), pure: no grpc, no
kubernetes import.

Device status (``--device-status``): after NodePrepareResources the driver writes one entry per prepared device
of the claim: ``driver``, ``pool``, ``device`` (``shareID`` for a consumable-capacity share), a condition
:data:`READY` (status True, reason ``Prepared``) and ``data`` ``{"cdiDeviceIDs": [...]}``.

Binding conditions (``--binding-conditions``): every published device carries ``bindingConditions:
[`` :data:`BINDING_READY` ``]`` and ``bindingFailureConditions: [`` :data:`BINDING_FAILED` ``]``; the scheduler
copies them into the allocation result and waits in PreBind until the driver sets :data:`BINDING_READY` True in
the device's ``status.devices`` entry (a True failure condition makes it deallocate and retry).

Sources: resource.k8s.io/v1 AllocatedDeviceStatus (driver, pool, device, shareID, conditions, data,
networkData), Device.bindingConditions / bindingFailureConditions, DeviceRequestAllocationResult.bindingConditions;
KEP-4817, KEP-5007; upstream dra.go "must be possible for the driver to update the ResourceClaim.Status.Devices
once allocated".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

READY = "Ready"
"""Condition type of a prepared device in its ``status.devices`` entry (device status mode)."""
BINDING_READY = "DeviceAttached"
"""The binding condition the reference driver publishes and sets True once the device is attached."""
BINDING_FAILED = "DeviceAttachFailed"
"""The binding failure condition the reference driver publishes (never set True by the healthy driver)."""


def _key(entry: Mapping) -> tuple:
    return (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or None)


def condition(kind: str, status: bool, reason: str, message: str, now: str) -> dict:
    """A metav1.Condition (``now``: RFC 3339 UTC, e.g. ``2026-01-01T00:00:00Z``)."""
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }


def prepared_entries(driver: str, devices: Iterable, now: str) -> list[dict]:
    """Entries for ``devices`` (:class:`~reference_driver.prepared.PreparedDevice`: pool, device, cdi_ids,
    share_id) of ``driver``: condition :data:`READY` True and ``data.cdiDeviceIDs``."""
    out = []
    for dev in devices:
        entry = {
            "driver": driver,
            "pool": dev.pool,
            "device": dev.device,
            "conditions": [condition(READY, True, "Prepared", "prepared by NodePrepareResources", now)],
            "data": {"cdiDeviceIDs": list(dev.cdi_ids)},
        }
        if dev.share_id:
            entry["shareID"] = dev.share_id
        out.append(entry)
    return out


def _merged_conditions(old: list[dict], new: list[dict]) -> list[dict]:
    by_type = {c.get("type"): c for c in old}
    for cond in new:
        prev = by_type.get(cond["type"])
        kept = prev.get("lastTransitionTime") if prev is not None and prev.get("status") == cond["status"] else None
        by_type[cond["type"]] = {**cond, "lastTransitionTime": kept or cond["lastTransitionTime"]}
    return list(by_type.values())


def merged(existing: Iterable[Mapping], updates: Iterable[Mapping]) -> list[dict]:
    """``existing`` status.devices entries with ``updates`` applied by (driver, pool, device, shareID):
    conditions merge by type (an unchanged status keeps its lastTransitionTime), other fields are replaced;
    entries written by others are kept as they are."""
    out = {_key(e): dict(e) for e in existing}
    for upd in updates:
        key = _key(upd)
        old = out.get(key, {})
        entry = {**old, **upd}
        entry["conditions"] = _merged_conditions(list(old.get("conditions") or []), list(upd.get("conditions") or []))
        out[key] = entry
    return list(out.values())


def unchanged(existing: Iterable[Mapping], updated: Iterable[Mapping]) -> bool:
    """Whether writing ``updated`` would change nothing (compared as sets of entries by key)."""
    return {_key(e): e for e in existing} == {_key(e): e for e in updated}


def with_binding_conditions(device: Mapping) -> dict:
    """A published device (ResourceSlice ``spec.devices[]`` entry) with the driver's binding conditions."""
    return {**device, "bindingConditions": [BINDING_READY], "bindingFailureConditions": [BINDING_FAILED]}


def binding_pending(claim: Mapping, driver: str, pool: str) -> list[dict]:
    """The allocation results of ``driver`` in ``pool`` whose ``bindingConditions`` are not all True in
    ``status.devices`` yet (each a result dict from ``status.allocation.devices.results``)."""
    status = claim.get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    entries = {_key(e): e for e in status.get("devices") or []}
    pending = []
    for res in results:
        wanted = res.get("bindingConditions") or []
        if res.get("driver") != driver or res.get("pool") != pool or not wanted:
            continue
        entry = entries.get(_key(res), {})
        true = {c.get("type") for c in entry.get("conditions") or [] if c.get("status") == "True"}
        if not set(wanted) <= true:
            pending.append(res)
    return pending


def binding_entries(results: Iterable[Mapping], now: str, *, attached: bool = True) -> list[dict]:
    """Entries setting each result's binding conditions True (``attached``) or its failure conditions True
    (``attached=False``)."""
    out = []
    for res in results:
        if attached:
            conds = [
                condition(c, True, "Attached", "device attached by the driver", now) for c in res["bindingConditions"]
            ]
        else:
            conds = [
                condition(c, True, "AttachFailed", "the driver could not attach the device", now)
                for c in res.get("bindingFailureConditions") or []
            ]
        entry = {"driver": res["driver"], "pool": res["pool"], "device": res["device"], "conditions": conds}
        if res.get("shareID"):
            entry["shareID"] = res["shareID"]
        out.append(entry)
    return out
