"""Pod state waits. Sources: core/v1 Pod phase and PodScheduled condition; DRA kubelet events
``FailedPrepareDynamicResources`` (pkg/kubelet/cm/dra) and container-creation refusals naming CDI (once) or an
NRI plugin's claim (repeated) (the kubelet's ``Failed`` event with the runtime's CreateContainerError text) that end
a wait early; a pod no scheduler places while the health watcher sees no kube-scheduler leading
(conformance/k8s/scheduler_health.py)."""

from __future__ import annotations

import contextlib
import re

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.k8s import node_health, scheduler_health
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, event_line, has_event, poll, recent_events, stays, until
from conformance.k8s.waits.objects import object_gone

PREPARE_FAILED = "FailedPrepareDynamicResources"
EVENT_POLL_S = 0.5  # seconds between event lists
# the runtime refused to create a container because of what the driver gave it: its NRI plugin ("failed to get
# NRI adjustment for container: ... claimUID ..."): after this many kubelet retries the refusal is the answer, not
# a start-up race. A CDI refusal counts at once (see runtime_refusal).
RUNTIME_REFUSALS = 3
CDI_REFUSED = "CDI device injection failed"
# a container's waiting reason when the node could not pull its image (kubelet pkg/kubelet/images/types.go)
PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


def _creating_fails(pod: Obj) -> bool:
    """Whether a container of ``pod`` is waiting now because the runtime could not create it."""
    statuses = (pod.get("status.initContainerStatuses") or []) + (pod.get("status.containerStatuses") or [])
    return any(((c.get("state") or {}).get("waiting") or {}).get("reason") == "CreateContainerError" for c in statuses)


def runtime_refusal(pod: Obj, events: list[Obj]) -> Obj | None:
    """The newest kubelet ``Failed`` event that reports the container runtime refusing to create a container of
    ``pod`` over what the driver gave it; None otherwise.

    - CDI (``CDI device injection failed``, e.g. ``unresolvable CDI devices <id>``): once is enough, also when the
      container runs now. A test pod's CDI devices are its claims' (the IDs NodePrepareResources answered), and
      containerd refreshes its CDI registry before every injection (``cdi.Refresh()`` then ``InjectDevices`` in
      its WithCDIDevices), so a refusal means the driver's spec was not on the node when it answered (a kubelet
      plugin writes its CDI spec before NodePrepareResources returns; breaker s14 B7: a driver writing it 3 s late
      was refused once per pod, then the kubelet's retry ran the pod and 16 of 17 tests passed).
    - NRI (``NRI`` and ``claim`` in the text: another NRI plugin's own trouble is not the driver's; breaker s13
      B5): counted :data:`RUNTIME_REFUSALS` times or more while a container waits with ``CreateContainerError``
      now (a start-up race retried away is not the answer; B6).

    Source: kubelet kuberuntime_manager (event reason ``Failed``, message ``Error: <runtime error>``), containerd's
    CDI injection and NRI adjustment errors."""
    waiting = _creating_fails(pod)
    for event in reversed(events):
        message = event.get("message") or ""
        if event.get("reason") != "Failed":
            continue
        if "create containerd container" not in message and "CreateContainerError" not in message:
            continue
        if CDI_REFUSED in message:
            return event
        nri = "NRI" in message and "claim" in message.lower()
        if nri and waiting and (event.get("count") or 1) >= RUNTIME_REFUSALS:
            return event
    return None


def _pod_failed(allow_prepare_errors: bool):
    def failed(pod: Obj | None, events: list[Obj]) -> str | None:
        if pod is None:
            return "the pod was deleted"
        if pod.phase == "Failed":
            return f"pod phase Failed: {pod.get('status.reason', '')} {pod.get('status.message', '')}".strip()
        down = node_health.down_evidence(pod.get("spec.nodeName") or "", node_health.DOWN_BOUND_S * timeouts.scale())
        if down:  # its node cut off longer than the bound: the pod cannot start there (rechecked every watch slice)
            return f"the pod's node is down: {down}"
        if not pod.get("spec.nodeName"):  # nothing can place it while no scheduler leads
            gone = scheduler_health.down_evidence(scheduler_health.DOWN_BOUND_S * timeouts.scale())
            if gone:
                return f"the pod is not scheduled and {gone}"
        if not allow_prepare_errors:
            event = has_event(events, PREPARE_FAILED)
            if event is not None:
                return f"kubelet could not prepare the pod's claims: {event_line(event)}"
        refused = None if allow_prepare_errors else runtime_refusal(pod, events)
        if refused is not None:
            return f"the container runtime refused the pod's container over the driver's CDI/NRI: {event_line(refused)}"
        return None

    return failed


def pod_running(k8s: K8s, pod: Obj, *, timeout: float, allow_prepare_errors: bool = False) -> Obj:
    """Wait until the pod is Running with all containers started; return it.

    Fails early when the pod Failed, was deleted, exited (Succeeded), or (unless ``allow_prepare_errors``)
    a ``FailedPrepareDynamicResources`` event names it, or it is unscheduled while no kube-scheduler leads. Raises
    WaitFailed / WaitTimeout (naming, for a pod no scheduler acted on, what is known of the scheduler).
    """
    base = _pod_failed(allow_prepare_errors)

    def failed(obj, events):
        if obj is not None and obj.phase == "Succeeded":
            return "the pod already exited (Succeeded)"
        return base(obj, events)

    def done(obj):
        return (
            obj is not None
            and obj.phase == "Running"
            and all(c.get("state", {}).get("running") for c in obj.get("status.containerStatuses") or [{}])
        )

    with _judged(k8s, pod):
        return until(
            k8s,
            "Pod",
            pod.name,
            pod.namespace,
            done=done,
            failed=failed,
            timeout=timeout,
            awaited=f"pod {pod.namespace}/{pod.name} Running",
            with_events=True,
        )


def pod_succeeded(k8s: K8s, pod: Obj, *, timeout: float, allow_prepare_errors: bool = False) -> Obj:
    """Wait until the pod phase is Succeeded (all containers exited 0); fails early as :func:`pod_running`."""
    with _judged(k8s, pod):
        return until(
            k8s,
            "Pod",
            pod.name,
            pod.namespace,
            done=lambda o: o is not None and o.phase == "Succeeded",
            failed=_pod_failed(allow_prepare_errors),
            timeout=timeout,
            awaited=f"pod {pod.namespace}/{pod.name} Succeeded",
            with_events=True,
        )


# the scheduler's event lines about a pod it could not place or bind yet (reason FailedScheduling, or KEP-5007's
# binding-conditions wait)
DRA_SCHEDULER_EVENT = re.compile(r" (FailedScheduling|BindingConditions\w*) ")
# a PodScheduled=False message (or such an event) naming DRA: the scheduler could not allocate the pod's claims from
# the driver's ResourceSlices, waits on its binding conditions, or on its ResourceClaim (kube-scheduler
# DynamicResources)
DRA_UNSCHEDULABLE = re.compile(
    r"cannot allocate|resourceclaim|resource claim|binding condition|CEL runtime error|selector #\d+", re.I
)
# a pod on its node that waits on the node itself, not on its claims: the CNI sandbox, a volume mount
NODE_SETUP_EVENT = re.compile(r" (FailedCreatePodSandBox|FailedMount|NetworkNotReady) ")


def timeout_party(pod: Obj, events: list[str]) -> str:
    """Who had to bring a pod that did not get Running about (``errors.DRIVER`` / ``errors.CLUSTER``), from the
    pod as last seen and its recent event lines (:func:`~conformance.k8s.waits.core.event_line`): the cluster's
    when a container waits on its image (a :data:`PULL_FAILURES` reason, or a ``Pulling`` event with no
    ``Pulled``), when no scheduler acted on it (no node, no PodScheduled condition) or when the scheduler gave a
    reason that is not DRA's (``Insufficient cpu``, an untolerated node taint); otherwise the driver's: the pod is
    on its node (NodePrepareResources, the CDI devices, the container start) or the scheduler could not allocate
    its claims from what the driver published. Source: kubelet images/types.go; kube-scheduler DynamicResources
    plugin messages; s16 breaker F1."""
    statuses = (pod.get("status.initContainerStatuses") or []) + (pod.get("status.containerStatuses") or [])
    if any(((c.get("state") or {}).get("waiting") or {}).get("reason") in PULL_FAILURES for c in statuses):
        return errors.CLUSTER
    if any(" Pulling " in e for e in events) and not any(" Pulled " in e for e in events):
        return errors.CLUSTER
    if pod.get("spec.nodeName"):
        return errors.CLUSTER if any(NODE_SETUP_EVENT.search(e) for e in events) else errors.DRIVER
    if any(DRA_UNSCHEDULABLE.search(e) for e in events if DRA_SCHEDULER_EVENT.search(e)):
        return errors.DRIVER  # the scheduler's own event names DRA (a claim it cannot allocate, binding conditions)
    scheduled = [c for c in pod.get("status.conditions") or [] if c.get("type") == "PodScheduled"]
    if not scheduled:
        return errors.CLUSTER
    return errors.DRIVER if DRA_UNSCHEDULABLE.search(scheduled[-1].get("message") or "") else errors.CLUSTER


@contextlib.contextmanager
def _judged(k8s: K8s, pod: Obj):
    """Re-raise a pod wait's WaitTimeout with its :func:`timeout_party` (the pod read again), and for a pod that
    no scheduler acted on (no node, no ``PodScheduled`` condition: not even "Unschedulable") with what is known of
    the kube-scheduler (``scheduler_health.liveness_note``), so a dead scheduler the run could not watch is named
    as unknown, not left as a bare timeout."""
    try:
        yield
    except errors.WaitTimeout as exc:
        try:
            now = k8s.get("Pod", pod.name, pod.namespace)
        except (errors.ConformanceError, OSError):
            raise exc from None
        exc.party = exc.party or timeout_party(now, exc.events)
        conditions = [c.get("type") for c in now.get("status.conditions") or []]
        acted = now.get("status.nominatedNodeName") or any(DRA_SCHEDULER_EVENT.search(e) for e in exc.events)
        if now.get("spec.nodeName") or "PodScheduled" in conditions or acted:
            raise
        note = f"no scheduler acted on the pod (no node, no PodScheduled condition); {scheduler_health.liveness_note()}"
        awaited = f"{exc.awaited} ({note})"
        raise errors.WaitTimeout(awaited, exc.timeout, exc.last_state, exc.events, party=exc.party) from None


@blames(errors.DRIVER)
def pod_gone(k8s: K8s, pod: Obj, *, timeout: float) -> None:
    """Wait until the pod object no longer exists (kubelet finished NodeUnprepareResources and removal)."""
    object_gone(k8s, pod, timeout=timeout)


def pod_unschedulable_with(
    k8s: K8s,
    pod: Obj,
    *texts: str | tuple[str, ...],
    timeout: float,
    reason: str | tuple[str, ...] = "Unschedulable",
) -> Obj:
    """Wait until the scheduler reports the pod not scheduled (PodScheduled=False) with ``reason`` (default
    ``Unschedulable``; a tuple: any of these) and a message containing every text in ``texts`` (a tuple among
    them: any one of its texts); return the pod. ``texts`` must name the scheduler's DRA reason (e.g. ``"cannot
    allocate all claims"``, ``"device class <name> does not exist"``, ``"CEL runtime error"``): an unschedulable
    pod alone proves nothing about DRA (it may lack CPU, tolerate no taint...). Raises ValueError without
    ``texts``.

    A CEL runtime error in a selector is reported with reason ``SchedulerError`` on 1.34 and
    ``Unschedulable`` (UnschedulableAndUnresolvable) later (upstream "keeps pod pending because of CEL
    runtime errors" checks only the message). Fails early when the pod gets scheduled or is deleted.
    """
    if not texts:
        raise ValueError("pod_unschedulable_with needs the scheduler's DRA reason text, e.g. 'cannot allocate'")
    reasons = (reason,) if isinstance(reason, str) else tuple(reason)

    def cond(obj):
        for c in obj.get("status.conditions") or []:
            if c.get("type") == "PodScheduled":
                return c
        return None

    def failed(obj, _events):
        if obj is None:
            return "the pod was deleted"
        if obj.get("spec.nodeName"):
            return f"the pod was scheduled to {obj.get('spec.nodeName')}"
        return None

    def done(obj):
        c = obj is not None and cond(obj)
        return (
            bool(c)
            and c.get("status") == "False"
            and c.get("reason") in reasons
            and all(_says(c.get("message") or "", t) for t in texts)
        )

    why = f" ({' or '.join(reasons)})"
    return until(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        done=done,
        failed=failed,
        timeout=timeout,
        awaited=f"pod {pod.namespace}/{pod.name} not scheduled{why} with {list(texts)}",
    )


def _says(message: str, text: str | tuple[str, ...]) -> bool:
    """``text`` is in ``message`` (a tuple: one of its texts is)."""
    return any(t in message for t in text) if isinstance(text, tuple) else text in message


def pod_stays_pending(k8s: K8s, pod: Obj, *, duration: float) -> Obj:
    """Assert the pod stays unscheduled for ``duration`` seconds (scaled) — upstream "consistently pending".

    Raises WaitFailed with the pod state if it gets a node or starts; returns the still-pending pod.
    """

    def failed(obj, _events):
        if obj is None:
            return "the pod was deleted"
        if obj.get("spec.nodeName") or obj.phase not in ("Pending", ""):
            return f"expected the pod to stay pending, but it is {obj.phase} on {obj.get('spec.nodeName')}"
        return None

    return stays(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        failed=failed,
        duration=duration,
        awaited=f"pod {pod.namespace}/{pod.name} to stay pending for {duration:.0f}s",
    )


def events_for(k8s: K8s, obj: Obj, reason: str | None = None) -> list[Obj]:
    """Events about ``obj`` (optionally only ``reason``), oldest first. Read strictly: raises
    EventsUnreadable when the list fails, so an empty answer means the API holds no such event (a negative
    check such as "no FailedPrepareDynamicResources" proves its look ran). Source: core/v1 Event."""
    events = recent_events(k8s, obj.namespace, obj.name, limit=200, strict=True)
    return [e for e in events if reason is None or e.get("reason") == reason]


def event(k8s: K8s, obj: Obj, reason: str, *, timeout: float, message_contains: str = "") -> Obj:
    """Wait until an Event with ``reason`` (and ``message_contains``) about ``obj`` exists; return it.

    Polls the namespace's events every 0.5 s (events are not worth a watch). Raises WaitTimeout.
    """
    found: list[Obj] = []

    def check() -> bool:
        found[:] = [e for e in reversed(events_for(k8s, obj, reason)) if message_contains in (e.get("message") or "")]
        return bool(found)

    if poll(check, timeout=timeout, interval=EVENT_POLL_S):
        return found[0]
    lines = [event_line(e) for e in recent_events(k8s, obj.namespace, obj.name)]
    raise errors.WaitTimeout(f"event {reason} about {obj.ref}", timeouts.scaled(timeout), "", lines)


def pod_stays_running(k8s: K8s, pod: Obj, *, duration: float) -> Obj:
    """Assert ``pod`` stays Running, not being deleted, for ``duration`` seconds, NOT scaled by
    ``--timeout-scale`` (the window is fixed by a rule such as a toleration's tolerationSeconds, which a slower
    cluster does not stretch). Raises WaitFailed with the pod's state as soon as it is deleted, gets a
    deletionTimestamp or leaves Running; returns the pod as last seen."""

    def failed(obj, _events):
        if obj is None:
            return "the pod was deleted"
        if obj.get("metadata.deletionTimestamp"):
            return f"the pod is being deleted (deletionTimestamp {obj.get('metadata.deletionTimestamp')})"
        return None if obj.phase == "Running" else f"expected the pod to stay Running, but it is {obj.phase}"

    return stays(
        k8s,
        "Pod",
        pod.name,
        pod.namespace,
        failed=failed,
        duration=duration,
        awaited=f"pod {pod.namespace}/{pod.name} to stay Running for {duration:.0f}s",
        scale=False,
    )


@blames(errors.DRIVER)
def prepare_failed(k8s: K8s, pod: Obj, *, timeout: float) -> Obj:
    """Wait until a ``FailedPrepareDynamicResources`` event names ``pod`` (the kubelet's NodePrepareResources
    failed for one of its claims); return the newest. Fails early (WaitFailed) as soon as the pod is Running
    instead: its claims were prepared although they must not be. ``timeout``: seconds. Raises WaitTimeout.
    Source: pkg/kubelet/cm/dra (per-claim errors become that event; the kubelet retries)."""
    awaited = f"event {PREPARE_FAILED} about {pod.ref}"
    found: list[Obj] = []

    def check() -> bool:
        found[:] = list(reversed(events_for(k8s, pod, PREPARE_FAILED)))
        if found:
            return True
        current = k8s.get("Pod", pod.name, pod.namespace)
        if current.phase == "Running":
            lines = [event_line(e) for e in recent_events(k8s, pod.namespace, pod.name)]
            failed = "the pod is Running: the driver prepared its claims without the expected per-claim error"
            raise errors.WaitFailed(awaited, timeouts.scaled(timeout), current.describe(), lines, failed)
        return False

    if poll(check, timeout=timeout, interval=EVENT_POLL_S):
        return found[0]
    lines = [event_line(e) for e in recent_events(k8s, pod.namespace, pod.name)]
    raise errors.WaitTimeout(awaited, timeouts.scaled(timeout), "", lines)
