"""Waiting until the scheduler applies a DeviceTaintRule. The rule reaches the scheduler through its informer,
so a pod created right after the rule may be scheduled before the scheduler has seen it; the API exposes no
"rule observed" state for NoSchedule. A canary pod whose claim only the tainted device satisfies shows it: once
the scheduler reports it unschedulable with its DRA reason, the rule is in effect.

Sources: KEP-5055 (DeviceTaintRule, scheduler plugin DynamicResources ignores tainted devices unless tolerated);
resource.k8s.io DeviceTaintRule ``spec.deviceSelector``.
"""

from __future__ import annotations

import time

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.dra.device_taints import EVICTION_REASON, eviction_condition
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, until
from conformance.k8s.waits.objects import object_gone
from conformance.k8s.waits.pods import pod_gone, pod_unschedulable_with


@blames(errors.CLUSTER)
def taint_rule_applied(k8s: K8s, tracker, builder, target, text: str, *, timeout: float) -> Obj:
    """Wait until a canary pod pinned to ``target.node`` (a :class:`~conformance.dra.device_taints.TaintTarget`),
    with a claim whose selector only ``target`` satisfies, is reported unschedulable with ``text`` (the
    scheduler's DRA reason, e.g. ``"cannot allocate all claims"``); return that still-pending canary pod (the
    tracker deletes it). A canary scheduled before the scheduler saw the rule is deleted with its claim (waited
    gone, so the device is free again) and a new one is tried. ``timeout``: seconds (scaled) for all tries.
    Raises WaitTimeout with the last canary's state when the rule never takes effect (e.g. the scheduler
    ignores it: every canary gets scheduled)."""
    deadline = time.monotonic() + timeouts.scaled(timeout)
    last: errors.WaitFailed | None = None
    while (left := deadline - time.monotonic()) > 0:
        claim = tracker.create(builder.claim(selectors=target.selector))
        canary = tracker.create(builder.pod(uses=claim, node_name=target.node))
        try:
            return pod_unschedulable_with(k8s, canary, text, timeout=left / timeouts.scaled(1.0))
        except errors.WaitFailed as exc:  # scheduled (or deleted): the scheduler had not seen the rule yet
            last = exc
        k8s.delete("Pod", canary.name, canary.namespace)
        pod_gone(k8s, canary, timeout=timeouts.POD_DELETE)
        k8s.delete("ResourceClaim", claim.name, claim.namespace)
        object_gone(k8s, claim, timeout=timeouts.DEALLOCATION)
    raise errors.WaitTimeout(
        f"DeviceTaintRule on {target.pool}/{target.name} applied by the scheduler", timeout, str(last or ""), []
    )


@blames(errors.CLUSTER)
def pod_evicted_by_taint(k8s: K8s, pod: Obj, *, after: float, timeout: float) -> Obj:
    """Wait until the device taint eviction controller marks ``pod`` for eviction: its DisruptionTarget condition
    with reason ``DeletionByDeviceTaintManager`` (written before it deletes the pod; :mod:`..device_taints`);
    return the pod carrying it. ``after``: seconds a rule fixes before the eviction is due (a toleration's
    tolerationSeconds plus its grace; NOT scaled: a slower cluster does not stretch it), ``timeout``: seconds
    (scaled) on top. Raises WaitFailed as soon as the pod is gone or being deleted without that condition (someone
    else deleted it), WaitTimeout when it is never marked."""

    def failed(obj: Obj | None, _events) -> str | None:
        if eviction_condition(obj) is not None:
            return None
        if obj is None:
            return "the pod was deleted without the device taint eviction controller's DisruptionTarget condition"
        if obj.get("metadata.deletionTimestamp"):
            return "the pod is being deleted without the device taint eviction controller's DisruptionTarget condition"
        return None

    return until(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        done=lambda obj: eviction_condition(obj) is not None,
        failed=failed,
        timeout=after + timeouts.scaled(timeout),
        scale=False,
        awaited=f"pod {pod.namespace}/{pod.name} evicted by the device taint eviction controller ({EVICTION_REASON})",
    )
