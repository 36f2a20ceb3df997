"""Pod waits the harness lacks: "not scheduled with this message" whatever the PodScheduled reason.

A CEL runtime error in a selector is reported by the scheduler as PodScheduled=False with reason
``SchedulerError`` (not ``Unschedulable``), message ``... CEL runtime error: no such key: ...`` (observed on
1.34; upstream "keeps pod pending because of CEL runtime errors" only checks the message).
Belongs in: conformance/k8s/waits/pods.py (a ``reason=`` option on pod_unschedulable_with).
"""
from __future__ import annotations

from conformance.api import waits


def _scheduled_condition(pod) -> dict:
    for cond in pod.get("status.conditions") or []:
        if cond.get("type") == "PodScheduled":
            return cond
    return {}


def pod_not_scheduled_with(k8s, pod, text: str, *, timeout: float):
    """Wait until PodScheduled is False with a message containing ``text`` (any reason); return the pod.
    Fails early when the pod is deleted (WaitFailed) and raises WaitTimeout with the last state."""
    def done(current) -> bool:
        cond = _scheduled_condition(current)
        return cond.get("status") == "False" and text in (cond.get("message") or "")
    return waits.object_matches(k8s, pod, done, timeout=timeout,
                                awaited=f"pod {pod.namespace}/{pod.name} not scheduled with {text!r}")
