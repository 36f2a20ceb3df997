"""ResourceClaim state waits. Source: resource.k8s.io/v1 ResourceClaim.status.allocation / reservedFor;
the resourceclaim controller deallocates after the last consumer is gone (KEP-4381)."""

from __future__ import annotations

from collections.abc import Iterable

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.dra.claimstatus import entry_key
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, until
from conformance.k8s.waits.objects import object_gone


def _deleted(obj: Obj | None, _events) -> str | None:
    return "the claim was deleted" if obj is None else None


@blames(errors.DRIVER)
def claim_allocated(k8s: K8s, claim: Obj, *, timeout: float, reserved_for: Iterable[Obj] = ()) -> Obj:
    """Wait until ``status.allocation`` is set (and, if given, every pod in ``reserved_for`` is in
    ``status.reservedFor``); return the claim. Fails early when the claim is deleted."""
    wanted = {p.uid or p.name for p in reserved_for}

    def done(obj):
        if obj is None or not obj.get("status.allocation"):
            return False
        have = {r.get("uid") for r in obj.get("status.reservedFor") or []} | {
            r.get("name") for r in obj.get("status.reservedFor") or []
        }
        return wanted <= have

    suffix = f" and reserved for {sorted(wanted)}" if wanted else ""
    return until(
        k8s,
        "ResourceClaim",
        claim.name,
        claim.namespace,
        done=done,
        failed=_deleted,
        timeout=timeout,
        awaited=f"claim {claim.namespace}/{claim.name} allocated{suffix}",
    )


@blames(errors.DRIVER)
def claim_device_status(k8s: K8s, claim: Obj, driver: str, *, timeout: float) -> Obj:
    """Wait until ``claim`` is allocated and every allocation result of ``driver`` has a ``status.devices``
    entry of ``driver`` (matched by driver, pool, device, shareID); return the claim, for the caller to judge
    the entries (e.g. :func:`~conformance.dra.claimstatus.device_status_problems`). A driver writes them after
    NodePrepareResources, possibly after the pod already runs. Source: KEP-4817 (ResourceClaim
    status.devices). Raises WaitTimeout naming the claim's last status, WaitFailed when it is deleted."""

    def done(obj):
        if obj is None or not obj.get("status.allocation"):
            return False
        mine = [entry_key(r) for r in obj.results if r.get("driver") == driver]
        have = {entry_key(e) for e in obj.get("status.devices") or [] if e.get("driver") == driver}
        return bool(mine) and set(mine) <= have

    return until(
        k8s,
        "ResourceClaim",
        claim.name,
        claim.namespace,
        done=done,
        failed=_deleted,
        timeout=timeout,
        awaited=f"claim {claim.namespace}/{claim.name}: a status.devices entry of {driver} per allocated device",
    )


@blames(errors.CLUSTER)
def claim_deallocated(k8s: K8s, claim: Obj, *, timeout: float) -> Obj | None:
    """Wait until the claim has no allocation and no reservedFor (or is gone); return it (None when gone)."""
    return until(
        k8s,
        "ResourceClaim",
        claim.name,
        claim.namespace,
        done=lambda o: o is None or (not o.get("status.allocation") and not o.get("status.reservedFor")),
        timeout=timeout,
        awaited=f"claim {claim.namespace}/{claim.name} deallocated",
    )


# the finalizer Kubernetes itself puts on a ResourceClaim (kube-controller-manager's resourceclaim controller)
CLAIM_PROTECTION = "resource.kubernetes.io/delete-protection"


@blames(errors.CLUSTER)
def claim_gone(k8s: K8s, claim: Obj, *, timeout: float) -> None:
    """Wait until the claim object no longer exists (its finalizers were removed). A timeout is the cluster's
    (kube-controller-manager removes :data:`CLAIM_PROTECTION`) unless another finalizer holds the claim: then it
    is the party that put it there, the driver's (s16 breaker 3 #4), and the message names the finalizers."""
    try:
        object_gone(k8s, claim, timeout=timeout)
    except errors.WaitTimeout as exc:
        try:
            held = k8s.get("ResourceClaim", claim.name, claim.namespace).get("metadata.finalizers") or []
        except (errors.ConformanceError, OSError):
            raise exc from None
        foreign = [f for f in held if f != CLAIM_PROTECTION]
        awaited = f"{exc.awaited} (finalizers: {', '.join(held) or 'none'})"
        party = errors.DRIVER if foreign else errors.CLUSTER
        raise errors.WaitTimeout(awaited, exc.timeout, exc.last_state, exc.events, party=party) from None


def pod_claims(k8s: K8s, pod: Obj) -> list[Obj]:
    """The ResourceClaims a pod uses, resolved through ``status.resourceClaimStatuses`` for templates."""
    names = {
        s.get("resourceClaimName") for s in pod.get("status.resourceClaimStatuses") or [] if s.get("resourceClaimName")
    }
    names |= {c.get("resourceClaimName") for c in pod.get("spec.resourceClaims") or [] if c.get("resourceClaimName")}
    return [k8s.get("ResourceClaim", n, pod.namespace) for n in sorted(names)]


def _failed_results(obj: Obj, driver: str) -> list[str]:
    """``pool/device`` of ``driver``'s allocation results with a True bindingFailureCondition in status.devices."""
    entries = {entry_key(e): e for e in obj.get("status.devices") or []}
    out = []
    for res in obj.results if obj.get("status.allocation") else []:
        true = {
            c.get("type") for c in entries.get(entry_key(res), {}).get("conditions") or [] if c.get("status") == "True"
        }
        if res.get("driver") == driver and true & set(res.get("bindingFailureConditions") or []):
            out.append(f"{res.get('pool')}/{res.get('device')}")
    return out


@blames(errors.DRIVER)
def claim_binding_failure_released(k8s: K8s, claim: Obj, driver: str, *, timeout: float) -> list[str]:
    """Wait until ``driver`` reported a binding failure for a device of ``claim`` (one of the result's
    ``bindingFailureConditions`` True in its ``status.devices`` entry) and the scheduler then released the
    allocation (``status.allocation`` empty); return the failed devices (``pool/device``).
    Fails early when the claim is deleted or every binding condition turned True without a failure (the
    scheduler would bind the pod). Source: KEP-5007; kube-scheduler DynamicResources (a failure condition makes
    the claim unavailable; PostFilter deallocates it and clears status.devices)."""
    failed_devices: list[str] = []

    def done(obj):
        if obj is None:
            return False
        if not failed_devices:
            failed_devices.extend(_failed_results(obj, driver))
            return False
        return not obj.get("status.allocation")

    def failed(obj, _events):
        if obj is None:
            return "the claim was deleted"
        if failed_devices or not obj.get("status.allocation"):
            return None
        entries = {entry_key(e): e for e in obj.get("status.devices") or []}
        for res in obj.results:
            wanted = set(res.get("bindingConditions") or [])
            conds = entries.get(entry_key(res), {}).get("conditions") or []
            if wanted and wanted <= {c.get("type") for c in conds if c.get("status") == "True"}:
                return f"the driver reported {res.get('pool')}/{res.get('device')} attached: binding conditions True"
        return None

    until(
        k8s,
        "ResourceClaim",
        claim.name,
        claim.namespace,
        done=done,
        failed=failed,
        timeout=timeout,
        awaited=f"claim {claim.namespace}/{claim.name}: a binding failure reported by {driver}, then the "
        "allocation released",
    )
    return failed_devices
