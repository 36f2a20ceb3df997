"""What the disruptive lane compares across a restart and the waits after it: a pod's containers (IDs and
restart counts), the driver's slices of one node (UIDs and devices), a node's pools republished, a pod
running again in new containers after a reboot.

Sources: KEP-4381 (a restarted driver republishes its node's pools; the kubelet wipes its node's slices at
start-up, upstream "ResourceSlice must be removed on kubelet startup"); kubelet pod sync (a pod whose sandbox
is gone gets a new sandbox and, with restartPolicy Always, new containers); feature catalog RST-07, RST-10.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.dra.inventory import driver_slices, pool_devices
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, event_line, poll, recent_events, stays
from conformance.k8s.waits.pods import pod_running
from conformance.k8s.waits.slices import SLICES_POLL_S, complete_pools


def containers(pod: Obj) -> dict[str, tuple[str, int]]:
    """``{container name: (containerID, restartCount)}`` from the pod's status ("" / 0 when not reported)."""
    return {
        s.get("name", ""): (s.get("containerID", ""), int(s.get("restartCount", 0)))
        for s in pod.get("status.containerStatuses") or []
    }


@dataclasses.dataclass(frozen=True)
class NodeSlices:
    """The driver's complete pools on one node: ``uids`` of their slices, ``devices`` as
    :func:`~conformance.dra.inventory.pool_devices` reads them (name -> attributes and capacities)."""

    node: str
    uids: frozenset
    devices: dict

    def __str__(self) -> str:
        return f"node {self.node}: {len(self.uids)} slice(s), devices {sorted(self.devices)[:8]}"


def node_slices(k8s: K8s, driver: str, node: str) -> NodeSlices:
    """The driver's complete pools published for ``node`` now (slices with ``spec.nodeName`` = node)."""
    mine = [s for s in driver_slices(k8s, driver) if s.get("spec.nodeName") == node]
    complete = [s for items in complete_pools(mine).values() for s in items]
    return NodeSlices(node, frozenset(s.uid for s in complete), pool_devices(complete))


@blames(errors.DRIVER)
def node_republished(
    k8s: K8s, driver: str, before: NodeSlices, *, timeout: float, replaced: bool = False
) -> NodeSlices:
    """Wait until ``driver`` publishes complete pools on ``before.node`` with exactly ``before.devices``; with
    ``replaced`` also none of ``before.uids`` (the slices were deleted and published again, as after the
    kubelet's start-up wipe). Polls every 2 s. Raises WaitTimeout with the last observed state."""
    last: list[NodeSlices] = [before]

    def check() -> bool:
        try:
            last[0] = node_slices(k8s, driver, before.node)
        except errors.TransientApiError:
            return False
        now = last[0]
        return bool(now.uids) and now.devices == before.devices and not (replaced and now.uids & before.uids)

    if poll(check, timeout=timeout, interval=SLICES_POLL_S):
        return last[0]
    what = "republished (new slices)" if replaced else "kept or republished"
    raise errors.WaitTimeout(
        f"driver {driver}'s pools on node {before.node} {what} with the {len(before.devices)} device(s) from before",
        timeouts.scaled(timeout),
        f"  before: {before}, slice UIDs {sorted(before.uids)}\n  now: {last[0]}, slice UIDs {sorted(last[0].uids)}",
    )


@blames(errors.DRIVER)
def pod_running_again(k8s: K8s, pod: Obj, before: dict[str, tuple[str, int]], *, timeout: float) -> Obj:
    """Wait until ``pod`` (same UID) runs again with every container of ``before`` (:func:`containers`) in a
    new container (another containerID), ready; return the pod. Raises WaitTimeout/WaitFailed (pod failed,
    deleted, a prepare error) with the pod's last state and events."""

    def renewed() -> bool:
        current = k8s.get("Pod", pod.name, pod.namespace)
        if current.uid != pod.uid:
            raise errors.WaitFailed(
                f"pod {pod.namespace}/{pod.name} running again", timeout, "", failed=f"replaced by UID {current.uid}"
            )
        now = containers(current)
        ready = all(s.get("ready") for s in current.get("status.containerStatuses") or [])
        return ready and all(now.get(n, ("", 0))[0] not in ("", cid) for n, (cid, _r) in before.items())

    if not poll(renewed, timeout=timeout, interval=1.0):
        current = k8s.get("Pod", pod.name, pod.namespace)
        raise errors.WaitTimeout(
            f"pod {pod.namespace}/{pod.name} running again in new containers",
            timeouts.scaled(timeout),
            f"  before {before}\n  now {containers(current)}\n  status {current.get('status.containerStatuses')}",
            [event_line(e) for e in recent_events(k8s, pod.namespace, pod.name)[-8:]],
        )
    # prepare errors before the driver registered again are expected after a reboot; the pod runs now
    return pod_running(k8s, pod, timeout=timeouts.API_SHORT, allow_prepare_errors=True)


def restarted_containers(before: dict[str, tuple[str, int]], pod: Obj) -> list[str]:
    """Containers of ``before`` whose ID or restart count differs in ``pod`` now (empty when none restarted)."""
    now = containers(pod)
    return [f"{n}: {before[n]} -> {now.get(n)}" for n in sorted(before) if now.get(n) != before[n]]


def still_present(k8s: K8s, claims: Iterable[Obj]) -> list[str]:
    """Of ``claims``, the ``namespace/name`` of those still present with the same UID (orphans)."""
    left = []
    for claim in claims:
        try:
            current = k8s.get("ResourceClaim", claim.name, claim.namespace)
        except errors.NotFound:
            continue
        if current.uid == claim.uid:
            left.append(f"{claim.namespace}/{claim.name}")
    return left


def pod_stays_not_running(k8s: K8s, pod: Obj, *, duration: float) -> Obj:
    """Assert ``pod`` does not reach phase Running for ``duration`` seconds (scaled), e.g. while the driver
    its claim needs is not installed; it may be scheduled. Raises WaitFailed with the pod's state when it
    runs or is deleted; returns the pod as last seen."""

    def failed(obj, _events):
        if obj is None:
            return "the pod was deleted"
        return (
            f"expected the pod not to run, but it is {obj.phase} on {obj.get('spec.nodeName')}"
            if obj.phase == "Running"
            else None
        )

    return stays(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        failed=failed,
        duration=duration,
        awaited=f"pod {pod.namespace}/{pod.name} not running for {duration:.0f}s",
    )
