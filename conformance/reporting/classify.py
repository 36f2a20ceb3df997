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
    # the cluster or its network did not answer
    "ClusterUnavailable": INFRASTRUCTURE,
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


def classify(exc: BaseException | None) -> str | None:
    """The failure class of ``exc`` (one of :data:`CLASSES`), ``None`` when there is no exception."""
    if exc is None:
        return None
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
