"""Device health in pod status (KEP-4680, ResourceHealthStatus): the kubelet writes, per container,
``status.containerStatuses[].allocatedResourcesStatus[]`` entries named ``claim:<claim>[/<request>]``, each with
``resources[]`` of ``{resourceID, health}`` where health is ``Healthy``, ``Unhealthy`` or ``Unknown`` and
resourceID is the device's first CDI device ID. Sources: core/v1 ContainerStatus.allocatedResourcesStatus;
kubelet pkg/kubelet/cm/dra/manager.go UpdateAllocatedResourcesStatus; upstream test/e2e_node/dra_test.go
(ResourceHealthStatus).
"""

from __future__ import annotations

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, stays, until

UNKNOWN = "Unknown"


def _statuses(pod: Obj | None, container: str | None) -> list[dict]:
    for status in (pod.get("status.containerStatuses") or []) if pod is not None else []:
        if container is None or status.get("name") == container:
            return list(status.get("allocatedResourcesStatus") or [])
    return []


def _healths(pod: Obj | None, container: str | None) -> list[str]:
    """The ``health`` of every device entry of ``container``'s allocatedResourcesStatus (``[]``: none yet)."""
    return [r.get("health") for s in _statuses(pod, container) for r in s.get("resources") or []]


def _pod_gone_or_ended(pod: Obj | None, _events: list[Obj] | None = None) -> str | None:
    """Why a health wait cannot go on: the pod was deleted or ended (Failed / Succeeded); None otherwise."""
    if pod is None:
        return "the pod was deleted"
    return f"the pod ended ({pod.phase})" if pod.phase in ("Failed", "Succeeded") else None


@blames(errors.DRIVER)
def device_health_reported(k8s: K8s, pod: Obj, *, timeout: float, container: str | None = None) -> list[dict]:
    """Wait until the kubelet reports a known health (not ``Unknown``) for every device in the
    ``allocatedResourcesStatus`` of ``container`` (default: the first) and at least one device; return those
    entries (``[{"name": "claim:<c>", "resources": [{"resourceID", "health"}]}]``).

    Fails early when the pod is deleted or ends (Failed / Succeeded). Raises WaitFailed / WaitTimeout; the
    timeout message shows the last pod status (an absent field: the cluster does not serve it).
    """

    def done(obj: Obj | None) -> bool:
        healths = _healths(obj, container)
        return bool(healths) and UNKNOWN not in healths

    found = until(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        done=done,
        failed=_pod_gone_or_ended,
        timeout=timeout,
        awaited=f"device health (not {UNKNOWN}) in allocatedResourcesStatus of pod {pod.namespace}/{pod.name}",
    )
    return _statuses(found, container)


@blames(errors.DRIVER)
def device_health_is(k8s: K8s, pod: Obj, health: str, *, timeout: float, container: str | None = None) -> list[dict]:
    """Wait until every device in the ``allocatedResourcesStatus`` of ``container`` (default: the first), and at
    least one, reports ``health`` (``Healthy`` | ``Unhealthy``); return those entries (as
    :func:`device_health_reported`). ``timeout``: seconds. Fails early when the pod is deleted or ends. Raises
    WaitFailed / WaitTimeout ("waiting for every device <health> in allocatedResourcesStatus of pod ...") with
    the last pod status. Source: KEP-4680 (a health change reaches the pod status)."""

    def done(obj: Obj | None) -> bool:
        healths = _healths(obj, container)
        return bool(healths) and set(healths) == {health}

    found = until(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        done=done,
        failed=_pod_gone_or_ended,
        timeout=timeout,
        awaited=f"every device {health} in allocatedResourcesStatus of pod {pod.namespace}/{pod.name}",
    )
    return _statuses(found, container)


def device_health_stays(
    k8s: K8s, pod: Obj, health: str, *, duration: float, why: str = "", container: str | None = None
) -> list[dict]:
    """Assert every device in the ``allocatedResourcesStatus`` of ``container`` (default: the first) keeps
    reporting ``health`` for ``duration`` seconds (scaled): the "consistently" wait; return the entries as last
    read. ``why`` is added to the failure (e.g. which other device was turned). Raises WaitFailed ("pod ...:
    device(s) no longer <health> ...: [entries]") as soon as one device reports another health, or the pod is
    deleted or ends. Source: KEP-4680 (health is per device: a change reaches the pods of that device only)."""

    def failed(obj: Obj | None, _events: list[Obj]) -> str | None:
        if (ended := _pod_gone_or_ended(obj)) is not None:
            return ended
        statuses = _statuses(obj, container)
        others = {r.get("resourceID"): r.get("health") for s in statuses for r in s.get("resources") or []}
        if any(h != health for h in others.values()):
            return f"pod {pod.namespace}/{pod.name}: device(s) no longer {health}{why}: {others}"
        return None

    last = stays(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        failed=failed,
        duration=duration,
        awaited=f"every device staying {health} in allocatedResourcesStatus of pod {pod.namespace}/{pod.name}",
    )
    return _statuses(last, container)
