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

from ..client import K8s
from ..objects import Obj
from .objects import object_gone
from .pods import pod_gone, pod_unschedulable_with


def taint_rule_applied(k8s: K8s, tracker, builder, target, text: str, *, timeout: float) -> Obj:
    """Wait until a canary pod pinned to ``target.node`` (a :class:`~conformance.k8s.device_taints.TaintTarget`),
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
