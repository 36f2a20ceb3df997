"""Waits named after states: ``waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)``.

Each is bounded (``timeout`` required, scaled by ``--timeout-scale``), driven by list-then-watch, ends early
on its failure predicate and raises :class:`~conformance.core.errors.WaitTimeout` (or ``WaitFailed``) with
what was awaited, the last observed state and recent events.
"""

from conformance.k8s.waits.claims import (
    claim_allocated,
    claim_binding_failure_released,
    claim_deallocated,
    claim_device_status,
    claim_gone,
    pod_claims,
)
from conformance.k8s.waits.core import EventsUnreadable, event_line, poll, recent_events, stays_equal, until
from conformance.k8s.waits.health import device_health_is, device_health_reported, device_health_stays
from conformance.k8s.waits.many import ManyTimeout, each_until
from conformance.k8s.waits.objects import default_service_account, object_gone, object_matches
from conformance.k8s.waits.pods import (
    event,
    events_for,
    pod_gone,
    pod_running,
    pod_stays_pending,
    pod_stays_running,
    pod_succeeded,
    pod_unschedulable_with,
    prepare_failed,
)
from conformance.k8s.waits.restarts import (
    NodeSlices,
    containers,
    node_republished,
    node_slices,
    pod_running_again,
    pod_stays_not_running,
    restarted_containers,
    still_present,
)
from conformance.k8s.waits.slices import (
    complete_pools,
    device_count,
    devices_by_node,
    pool_republished,
    slices_gone,
    slices_published,
)
from conformance.k8s.waits.taints import pod_evicted_by_taint, taint_rule_applied

__all__ = [
    "NodeSlices",
    "pod_evicted_by_taint",
    "containers",
    "node_republished",
    "node_slices",
    "pod_running_again",
    "pod_stays_not_running",
    "restarted_containers",
    "still_present",
    "claim_allocated",
    "claim_binding_failure_released",
    "claim_deallocated",
    "claim_device_status",
    "claim_gone",
    "complete_pools",
    "default_service_account",
    "device_health_is",
    "device_health_reported",
    "device_health_stays",
    "device_count",
    "devices_by_node",
    "event",
    "event_line",
    "prepare_failed",
    "events_for",
    "EventsUnreadable",
    "object_gone",
    "object_matches",
    "pod_claims",
    "pod_gone",
    "pod_running",
    "pod_stays_pending",
    "pod_stays_running",
    "pod_succeeded",
    "pod_unschedulable_with",
    "poll",
    "pool_republished",
    "recent_events",
    "slices_gone",
    "slices_published",
    "stays_equal",
    "taint_rule_applied",
    "until",
    "each_until",
    "ManyTimeout",
]
