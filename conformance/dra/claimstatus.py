"""Judgements on what a ResourceClaim's status says beyond allocation: the claim generated for a pod's extended
resources (KEP-5004), the driver-written ``status.devices`` (KEP-4817) and binding conditions (KEP-5007).

Each ``*_problems`` function returns a list of human-readable problems (empty: conforming), naming the devices
and fields concerned, so a suite asserts ``not problems`` with the list as the message.

Sources: core/v1 PodStatus.extendedResourceClaimStatus (requestMappings: containerName, resourceName,
requestName; resourceClaimName) and the claim annotation ``resource.kubernetes.io/extended-resource-claim``;
resource.k8s.io/v1 AllocatedDeviceStatus (driver, pool, device, shareID, conditions, data, networkData),
DeviceRequestAllocationResult.bindingConditions / bindingFailureConditions; upstream test/e2e/dra
"must be possible for the driver to update the ResourceClaim.Status.Devices once allocated" and
"must accurately populate ExtendedResourceClaimStatus"; test/integration/dra binding_conditions.go.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable

from conformance.core.objects import Obj

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
"""Every DeviceClass ``<name>`` also serves the extended resource ``deviceclass.resource.kubernetes.io/<name>``."""


def extended_claim(pod: Obj) -> Obj:
    """A reference (kind, name, namespace; no API read) to the ResourceClaim the scheduler generated for ``pod``'s
    extended resources, from ``status.extendedResourceClaimStatus.resourceClaimName``. Raises LookupError with the
    pod status when the pod has none."""
    name = pod.get("status.extendedResourceClaimStatus.resourceClaimName")
    if not name:
        raise LookupError(
            f"pod {pod.namespace}/{pod.name} has no status.extendedResourceClaimStatus.resourceClaimName:\n"
            + pod.describe(status_only=True)
        )
    return Obj(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": pod.namespace},
        }
    )


def extended_claim_problems(pod: Obj, claim: Obj, container: str, resources: Iterable[str]) -> list[str]:
    """What is wrong with ``claim`` as the generated claim of ``pod`` whose ``container`` asks for the extended
    ``resources``: the annotation, the controlling ownerReference to the pod, one request mapping per resource
    naming a request of the claim that has allocation results, and ``reservedFor`` holding the pod."""
    problems = []
    if (claim.get("metadata.annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
        problems.append(f'claim {claim.name} lacks the annotation {EXTENDED_RESOURCE_CLAIM_ANNOTATION}: "true"')
    owners = [o for o in claim.get("metadata.ownerReferences") or [] if o.get("kind") == "Pod"]
    if [(o.get("uid"), bool(o.get("controller"))) for o in owners] != [(pod.uid, True)]:
        problems.append(f"claim {claim.name} is not controlled by pod {pod.name} ({pod.uid}): owners {owners}")
    requests = {r.get("name") for r in claim.get("spec.devices.requests") or []}
    allocated = {r.request.split("/", 1)[0] for r in claim.results}
    mappings = pod.get("status.extendedResourceClaimStatus.requestMappings") or []
    for resource in resources:
        mine = [m for m in mappings if m.get("containerName") == container and m.get("resourceName") == resource]
        if len(mine) != 1:
            problems.append(f"requestMappings for container {container} resource {resource}: {mine} (want one)")
        elif mine[0].get("requestName") not in requests & allocated:
            problems.append(
                f"request {mine[0].get('requestName')!r} mapped for {resource} is not an allocated request of the "
                f"claim (requests {sorted(requests)}, allocated {sorted(allocated)})"
            )
    if pod.uid not in {r.get("uid") for r in claim.reserved_for}:
        problems.append(f"claim {claim.name} is not reserved for pod {pod.name}: {claim.get('status.reservedFor')}")
    return problems


def entry_key(entry) -> tuple:
    """``(driver, pool, device, shareID or None)`` of a status.devices entry or an allocation result: the
    identity KEP-4817 matches AllocatedDeviceStatus entries to allocation results by."""
    return (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or None)


def _condition_problems(where: str, conditions: list[dict]) -> list[str]:
    problems = []
    for cond in conditions:
        missing = [f for f in ("type", "status", "reason", "lastTransitionTime") if not cond.get(f)]
        if missing or cond.get("status") not in ("True", "False", "Unknown"):
            problems.append(f"{where}: condition {cond} lacks {missing} or has a status not True/False/Unknown")
    return problems


def _network_problems(where: str, data: dict | None) -> list[str]:
    problems = []
    for ip in (data or {}).get("ips") or []:
        try:
            if "/" not in str(ip):
                raise ValueError(ip)
            ipaddress.ip_interface(ip)
        except ValueError:
            problems.append(f"{where}: networkData.ips entry {ip!r} is not an IP address with prefix length")
    return problems


def device_status_problems(claim: Obj, driver: str) -> list[str]:
    """What is wrong with ``claim``'s ``status.devices`` as written by ``driver``: every allocation result of the
    driver needs exactly one entry (by driver, pool, device, shareID) with well-formed conditions (type, status,
    reason, lastTransitionTime) and, when given, networkData IPs in CIDR form; the driver has no entry for a
    device the claim was not allocated."""
    allocated = {entry_key(r): r for r in claim.results if r.get("driver") == driver}
    entries = [e for e in claim.get("status.devices") or [] if e.get("driver") == driver]
    problems = []
    if not allocated:
        problems.append(f"claim {claim.name} has no allocation result of driver {driver}")
    for key in allocated:
        mine = [e for e in entries if entry_key(e) == key]
        where = f"status.devices entry for {key[1]}/{key[2]}"
        if len(mine) != 1:
            problems.append(f"{where}: {len(mine)} entries (want exactly one)")
            continue
        problems += _condition_problems(where, list(mine[0].get("conditions") or []))
        problems += _network_problems(where, mine[0].get("networkData"))
    for entry in entries:
        if entry_key(entry) not in allocated:
            problems.append(
                f"status.devices names {entry.get('pool')}/{entry.get('device')}, not allocated to the claim"
            )
    return problems


def _true(entry: dict | None, types: Iterable[str]) -> dict[str, str]:
    """``{type: lastTransitionTime}`` of the conditions among ``types`` that are True in ``entry``."""
    conds = {c.get("type"): c for c in (entry or {}).get("conditions") or []}
    return {t: conds[t].get("lastTransitionTime", "") for t in types if conds.get(t, {}).get("status") == "True"}


def api_second(stamp: str) -> datetime.datetime | None:
    """An RFC 3339 time (``metav1.Time``, ``Z`` or an offset, fractions allowed) cut to whole seconds, the
    resolution the API server stores condition times at; None when empty or not a time."""
    try:
        when = datetime.datetime.fromisoformat(stamp).replace(microsecond=0)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


def binding_problems(claim: Obj, pod: Obj, driver: str) -> list[str]:
    """What is wrong with a bound ``pod``'s ``claim`` under KEP-5007: each allocation result of ``driver`` carries
    the device's ``bindingConditions`` (copied by the scheduler), every one of them is True in the device's
    ``status.devices`` entry, none of its ``bindingFailureConditions`` is, and the pod's PodScheduled condition
    did not turn True before the last binding condition did. Times are compared as times at the API's
    one-second resolution: the PodScheduled=True transition must be at or after (>=) every binding condition's
    lastTransitionTime; the same second cannot be ordered and passes, a missing or unparsable time is a
    problem (the order cannot be judged)."""
    results = [r for r in claim.results if r.get("driver") == driver]
    entries = {entry_key(e): e for e in claim.get("status.devices") or []}
    scheduled = next(
        (
            c.get("lastTransitionTime", "")
            for c in pod.get("status.conditions") or []
            if c.get("type") == "PodScheduled" and c.get("status") == "True"
        ),
        "",
    )
    problems = [] if results else [f"claim {claim.name} has no allocation result of driver {driver}"]
    for res in results:
        where, wanted = f"device {res.get('pool')}/{res.get('device')}", list(res.get("bindingConditions") or [])
        if not wanted:
            problems.append(f"{where}: the allocation result carries no bindingConditions")
            continue
        true = _true(entries.get(entry_key(res)), wanted)
        failed = _true(entries.get(entry_key(res)), res.get("bindingFailureConditions") or [])
        if set(true) != set(wanted) or failed:
            problems.append(f"{where}: binding conditions True {sorted(true)} of {wanted}, failure True {failed}")
            continue
        times, bound = [api_second(t) for t in true.values()], api_second(scheduled)
        if bound is None or None in times:
            problems.append(f"{where}: cannot order PodScheduled=True at {scheduled!r} and binding conditions {true}")
        elif not bound >= max(times):
            problems.append(f"{where}: pod scheduled at {scheduled}, before its binding conditions turned True {true}")
    return problems
