"""Failure classes: which failures are driver defects, cluster/infrastructure errors or suite errors.

This table is the one place the mapping is defined. It is used for the ``failure_class`` Allure label
(set by the plugin), the Allure 3 categories (:func:`allure_categories`), the Allure 2-compatible
``categories.json`` (:func:`allure2_categories`) and summary.json. Exceptions are matched by class name along
their MRO, so the table names classes of :mod:`conformance.core.errors`, the standard library and client
libraries without importing them (first match wins, most derived class first).

Source: reporting.md §4.3 (failed = driver defect, broken = infrastructure or test error).
"""

from __future__ import annotations

import re

import yaml

from conformance.core import errors
from conformance.k8s.waits.pods import CDI_REFUSED, PREPARE_FAILED, PULL_FAILURES

DRIVER_DEFECT = "driver-defect"
INFRASTRUCTURE = "infrastructure"
SUITE_ERROR = "suite-error"

CLASSES = (DRIVER_DEFECT, INFRASTRUCTURE, SUITE_ERROR)

TITLES = {
    DRIVER_DEFECT: "Driver defects",
    INFRASTRUCTURE: "Cluster / infrastructure errors",
    SUITE_ERROR: "Suite errors",
}

# exception class name -> failure class (conformance.core.errors, builtins, pytest, urllib3, kubernetes)
BY_EXCEPTION = {
    # an assertion about the driver's behaviour did not hold
    "AssertionError": DRIVER_DEFECT,
    "Failed": DRIVER_DEFECT,  # pytest.fail()
    "WaitFailed": DRIVER_DEFECT,  # a wait ended early: pod Failed, FailedPrepareDynamicResources...
    "DriverNotReady": DRIVER_DEFECT,  # no kubelet plugin / ResourceSlices / DeviceClass
    "LeakError": DRIVER_DEFECT,  # objects (claims) survived teardown: not deallocated/unprepared
    "ProbeCommandFailed": DRIVER_DEFECT,  # the vendor probe ran in the claim's container and exited != 0
    "PluginRelayError": INFRASTRUCTURE,  # our helper pod's relay to the plugin socket gave no answer
    "DraPluginError": DRIVER_DEFECT,  # the driver's own DRAPlugin socket broke the wire contract (no entry, status)
    # the cluster or its network did not answer
    "ClusterUnavailable": INFRASTRUCTURE,
    # a timeout by its party (:func:`timeout_class`): a WaitTimeout whose wait did not know who had to act
    "WaitTimeout": INFRASTRUCTURE,
    "TransientApiError": INFRASTRUCTURE,  # 429 / 5xx after retries
    "ConnectionError": INFRASTRUCTURE,
    "TimeoutError": INFRASTRUCTURE,
    "MaxRetryError": INFRASTRUCTURE,  # urllib3
    "NewConnectionError": INFRASTRUCTURE,
    "ProtocolError": INFRASTRUCTURE,
    "Timeout": INFRASTRUCTURE,  # pytest-timeout
    # everything else (ConfigError, TypeError, KeyError in a fixture...) is a suite error
}


# The container runtime could not start the shim process of a container's task: containerd v2 wraps it as
# "failed to create containerd task: " (internal/cri/server/container_start.go, StartContainer) around
# "failed to start shim: " (core/runtime/v2/task_manager.go) around "start failed: " (shim_manager.go); the CRI
# records it as the container's StartError message and the kubelet's Failed event says "Error: <message>". The
# shim starts before the OCI runtime reads the container's spec, so nothing a driver wrote (its CDI spec, an NRI
# adjustment, NodePrepareResources' answer) takes part: the runtime failing, not the driver. Anchored at the
# start of the message: a driver-written text (a CDI hook's stderr inside "failed to create shim task: OCI
# runtime create failed: ...") that merely contains the words does not count.
SHIM_START = re.compile(r"^failed to create containerd task: failed to start shim: ")
# container states whose message is the runtime's error (kubelet: StartError from containerd, RunContainerError
# while the kubelet retries the start)
_RUNTIME_STATES = (("terminated", "StartError"), ("waiting", "RunContainerError"))
# a kubelet Failed event line (conformance/k8s/waits/core.py event_line: "<type> Failed <kind>/<name>: <message>")
_FAILED_EVENT = re.compile(r"^\S* Failed \S+: (?P<message>.*?)(?: \(x\d+\))?$")


def _container_statuses(last_state: str) -> list:
    """The (init) container statuses in a wait's ``last_state`` (the YAML of ``{ref, status}`` a pod wait records,
    conformance/k8s/waits/core.py); unparsable or foreign text: none."""
    try:
        doc = yaml.safe_load(last_state or "")
    except yaml.YAMLError:
        return []
    status = (doc or {}).get("status") if isinstance(doc, dict) else None
    if not isinstance(status, dict):
        return []
    return (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])


def _container_messages(last_state: str) -> list[str]:
    """The runtime error messages of the containers in a wait's ``last_state``: state and lastState of (init)
    containers in a :data:`_RUNTIME_STATES` reason."""
    out = []
    for c in _container_statuses(last_state):
        for key in ("state", "lastState"):
            state = (c or {}).get(key) or {}
            for phase, reason in _RUNTIME_STATES:
                entry = state.get(phase) or {}
                if entry.get("reason") == reason:
                    out.append(str(entry.get("message") or ""))
    return out


def runtime_shim_failure(exc: BaseException) -> str:
    """The runtime's shim start error that ended the pod wait ``exc`` (a WaitFailed: its ``last_state``,
    ``events`` and ``failed``), ``""`` when none or when the driver's own refusal shows beside it: a CDI injection
    refusal (``CDI device injection failed``: the driver's CDI spec), a ``FailedPrepareDynamicResources`` event
    or an NRI/CDI refusal the wait named stays the driver's defect. Evidence: the first matching message
    (:data:`SHIM_START`). Source: containerd v2.2 core/runtime/v2/task_manager.go, kubelet
    kuberuntime_container.go (event reason Failed, "Error: %v")."""
    failed, events = str(getattr(exc, "failed", "") or ""), [str(e) for e in getattr(exc, "events", None) or []]
    messages = _container_messages(str(getattr(exc, "last_state", "") or ""))
    messages += [m.group("message").removeprefix("Error: ") for m in map(_FAILED_EVENT.match, events) if m]
    driver_side = CDI_REFUSED in failed or PREPARE_FAILED in failed or "CDI/NRI" in failed
    driver_side |= any(CDI_REFUSED in m for m in messages)
    driver_side |= any(f" {PREPARE_FAILED} " in f" {e} " for e in events)
    if driver_side:
        return ""
    return next((m for m in messages if SHIM_START.match(m)), "")


def image_pull_failure(exc: BaseException) -> str:
    """The image pull error of a container in the pod wait ``exc`` (a WaitError's ``last_state``): ``"<reason>:
    <message>"`` of the first container waiting in one of :data:`PULL_FAILURES`, ``""`` when none. The node could
    not pull the profile's probe image (registry, mirror, credentials): the cluster's, not the driver's, which
    never sees a container that has no image. Source: kubelet images/types.go (ErrImagePull, ImagePullBackOff,
    ErrImageNeverPull, InvalidImageName)."""
    for container in _container_statuses(str(getattr(exc, "last_state", "") or "")):
        waiting = ((container or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in PULL_FAILURES:
            return f"{waiting['reason']}: {waiting.get('message') or ''}".strip()
    return ""


def timeout_class(exc: BaseException) -> str:
    """The class of a WaitTimeout by its ``party`` (conformance/core/errors.py WaitError): the driver's wait
    (slices republished, device health, a pod on its node not Running, a pod whose claims the scheduler could not
    allocate, a pod never removed while its node holds the claim) is a driver defect; the cluster's (the
    ServiceAccount, a claim deallocated after its pod is gone, a DeviceTaintRule applied, a pod no scheduler
    acted on or unschedulable for a reason not DRA's, the lab's own restarts) and a wait that could not tell are
    infrastructure, as is every timeout over an outage the health watcher observed (cluster_fault.py). s15
    breaker C2, s16 breaker F1."""
    return DRIVER_DEFECT if getattr(exc, "party", "") == errors.DRIVER else INFRASTRUCTURE


def classify(exc: BaseException | None) -> str | None:
    """The failure class of ``exc`` (one of :data:`CLASSES`), ``None`` when there is no exception. A pod wait that
    failed on the container runtime's shim start (:func:`runtime_shim_failure`) or on an image pull
    (:func:`image_pull_failure`) is infrastructure."""
    if exc is None:
        return None
    names = [cls.__name__ for cls in type(exc).__mro__]
    if "WaitFailed" in names and runtime_shim_failure(exc):
        return INFRASTRUCTURE
    if "WaitError" in names and image_pull_failure(exc):
        return INFRASTRUCTURE
    if "WaitTimeout" in names:
        return timeout_class(exc)
    for cls in type(exc).__mro__:
        found = BY_EXCEPTION.get(cls.__name__)
        if found:
            return found
    return SUITE_ERROR


def classify_message(message: str | None, status: str) -> str | None:
    """Classify a recorded result from its Allure ``statusDetails.message`` (``pkg.Class: text``).

    Used for results written without the ``failure_class`` label (older runs, foreign results).
    ``status``: the Allure status; ``None`` for passed/skipped results.
    """
    if status not in ("failed", "broken"):
        return None
    head = (message or "").split(":", 1)[0].strip()
    name = head.rsplit(".", 1)[-1]
    if name in BY_EXCEPTION:
        return BY_EXCEPTION[name]
    return DRIVER_DEFECT if status == "failed" else SUITE_ERROR


def allure_categories() -> list[dict]:
    """Allure 3 ``categories`` config rules matching the ``failure_class`` label."""
    return [
        {"id": c, "name": TITLES[c], "matchers": {"labels": {"failure_class": f"^{c}$"}}, "expand": True}
        for c in CLASSES
    ]


def allure2_categories() -> list[dict]:
    """Allure 2 ``categories.json`` entries (``messageRegex`` over the exception class names)."""
    out = []
    for c in CLASSES:
        names = sorted(n for n, v in BY_EXCEPTION.items() if v == c)
        if names:
            rx = r"(?s)^([\w.]*\.)?(" + "|".join(re.escape(n) for n in names) + r")\b.*"
            out.append({"name": TITLES[c], "matchedStatuses": ["failed", "broken"], "messageRegex": rx})
    out.append({"name": TITLES[SUITE_ERROR], "matchedStatuses": ["broken"]})
    return out
