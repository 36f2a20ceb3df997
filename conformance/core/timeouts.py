"""Named timeouts in seconds, each with its upstream source (feature-catalog.md §7).

Suites use the constants (``timeouts.POD_START``); :func:`scaled` multiplies by ``--timeout-scale``,
which the plugin sets once per run with :func:`set_scale`. Pure: no I/O.
"""

from __future__ import annotations

# test/e2e/framework: PodStartTimeout = 5 min (framework.TestContext.timeouts.PodStart).
POD_START = 300.0
# test/e2e/framework: PodDelete = 5 min (pods with claims wait for NodeUnprepareResources).
POD_DELETE = 300.0
# test/e2e/dra: claims are allocated by the scheduler while the pod is scheduled (within PodStart).
ALLOCATION = 120.0
# After pod deletion the resourceclaim controller removes reservedFor and deallocates (dra.go cleanup).
DEALLOCATION = 120.0
# test/e2e/dra/utils: plugin registration is awaited for 1 min (kubelet plugin watcher).
PLUGIN_REGISTRATION = 60.0
# test/e2e/dra/utils: ResourceSlices are expected within 1 min of driver start.
SLICES_PUBLISHED = 60.0
# test/e2e/dra "consistently pending" windows: 20 s control plane, 60 s with a kubelet.
CONSISTENTLY_PENDING = 20.0
CONSISTENTLY_PENDING_NODE = 60.0
# kubelet retries failed NodePrepare/Unprepare with a 90 s backoff period -> ~120 s for a retry assertion.
KUBELET_RETRY = 120.0
# test/e2e_node/dra_test.go: slices are republished within 5 min after a kubelet restart.
REPUBLISH_AFTER_RESTART = 300.0
# Namespace deletion: framework.DefaultNamespaceDeletionTimeout = 5 min.
NAMESPACE_DELETE = 300.0
# The visibility probe is a container's first command; its end marker is awaited in the log after Running
# (upstream e2eoutput.LookForStringInLog polls a container's log with a caller-given timeout; 1 min here).
PROBE_OUTPUT = 60.0
# Short API round trips (object visible after create, event appears).
API_SHORT = 30.0
# pkg/kubelet/cm/dra: a node's ResourceSlices of a driver are wiped defaultWipingDelay (30 s) after its last plugin
# instance unregistered; twice that plus a minute for the API and a loaded node.
SLICES_WIPED = 120.0
# KEP-4680 device health in pod status: the kubelet turns a device not reported for 30 s Unknown
# (pkg/kubelet/cm/dra/healthinfo.go healthTimeout) and rewrites the pod status on its next sync: 2 x 30 s.
DEVICE_HEALTH = 60.0
# KEP-4817 status.devices: written by the driver after NodePrepareResources, not necessarily before the pod
# runs (KEP-4817 sets no deadline); one API update plus a driver retry after a conflict: 1 min.
DEVICE_STATUS = 60.0

_scale = 1.0


def set_scale(factor: float) -> None:
    """Set the run's ``--timeout-scale`` (> 0). Raises ValueError otherwise."""
    global _scale  # noqa: PLW0603 - one run-wide scale, set once from RunConfig
    if not factor > 0:
        raise ValueError(f"timeout scale must be > 0, got {factor!r}")
    _scale = float(factor)


def scale() -> float:
    """The current timeout scale factor."""
    return _scale


def scaled(seconds: float) -> float:
    """``seconds`` multiplied by the run's timeout scale."""
    return float(seconds) * _scale
