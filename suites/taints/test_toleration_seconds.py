"""A NoExecute device taint tolerated for a time (KEP-5055 ``tolerationSeconds``): the pod using the tainted device
keeps running until that time has passed since the taint was added, and is evicted then, its claim released
and unprepared on the node. The rule names one published device of the driver under test (driver, pool, device).

When the eviction starts is judged on cluster timestamps only, never on this process's clock: the rule's
``spec.taint.timeAdded`` (set by the API server at creation, whole seconds) against the ``lastTransitionTime`` of
the DisruptionTarget condition (reason DeletionByDeviceTaintManager) the eviction controller writes right before
it deletes the pod. Its timer fires at timeAdded + tolerationSeconds, so the condition may not be earlier (less
the one-second resolution) nor more than EVICTION_GRACE_S later. A driver cannot make the eviction late or early
(kube-controller-manager decides it from the taint and the allocation's tolerations; the driver only prepares
and unprepares): the bound is a platform check, and the driver's part is that the pod runs at all (fault
``toleration-seconds-refused``) and its claim is released afterwards.

Sources: resource.k8s.io/v1 DeviceToleration.tolerationSeconds ("the period of time the toleration ... tolerates the
taint"; eviction at DeviceTaint.timeAdded + tolerationSeconds), KEP-5055; kube-controller-manager device taint
eviction controller (pkg/controller/devicetainteviction: timed eviction, DisruptionTarget condition then delete);
feature-catalog.md §5.J (TAINT-08).
"""

import pytest

from conformance.api import eviction_delay, leftovers, request, timeouts, toleration, waits

pytestmark = [
    pytest.mark.taints,
    pytest.mark.full,
    pytest.mark.kep(5055),
    pytest.mark.requires("api.devicetaintrules", "driver.taints", "allocator.result_tolerations"),
]

TAINT_KEY = "dra-conformance.test/under-test"
TOLERATION_SECONDS = 30
# timeAdded and lastTransitionTime are whole seconds: an eviction in the due second may read up to 1 s early
RESOLUTION_S = 1
# how late the eviction may start: the controller's timer fires at the due time, then it reads the pod and writes
# the condition (one GET, one PATCH); 10 s cover it seeing the rule late through its informer and a loaded control
# plane (2 shared cores), while an eviction minutes late fails. Not scaled by --timeout-scale: it bounds the
# controller, not a wait of this process.
EVICTION_GRACE_S = 10


@pytest.mark.scenario("TAINT-08")
def test_noexecute_taint_tolerated_for_seconds_evicts_only_after_they_passed(
    k8s, tracker, builder, taint_target, node_access
):
    """A running pod whose claim tolerates a NoExecute taint for N seconds is evicted by the device taint eviction
    controller no earlier than N seconds after the rule's taint was added (timeAdded) and at most
    EVICTION_GRACE_S later, and its claim is released on the node.
    Source: KEP-5055 DeviceToleration.tolerationSeconds; upstream "DeviceTaintRule evicts pod" (delayed)."""
    # given: a running pod whose claim holds one device and tolerates the taint for TOLERATION_SECONDS
    t = taint_target
    tolerates = toleration(TAINT_KEY, operator="Exists", effect="NoExecute", toleration_seconds=TOLERATION_SECONDS)
    claim = tracker.create(builder.claim(requests=[request(selectors=t.selector, tolerations=[tolerates])]))
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim, node_name=t.node)), timeout=timeouts.POD_START)
    # when: a NoExecute rule names that device (the API server stamps its taint's timeAdded)
    rule = tracker.create(builder.device_taint_rule(key=TAINT_KEY, effect="NoExecute", pool=t.pool, device=t.name))
    # then: the eviction starts once TOLERATION_SECONDS have passed since timeAdded, not before, not much later
    due_by = TOLERATION_SECONDS + EVICTION_GRACE_S
    evicted = waits.pod_evicted_by_taint(k8s, pod, after=due_by, timeout=timeouts.API_SHORT)
    late, evidence = eviction_delay(rule, evicted, TOLERATION_SECONDS)
    assert -RESOLUTION_S <= late <= EVICTION_GRACE_S, evidence
    # and: the pod is gone and its claim released and unprepared on the node
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    left = leftovers(node_access, t.node, claim)
    assert left.found == [], left.describe()
