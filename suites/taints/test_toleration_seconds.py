"""A NoExecute device taint tolerated for a time (KEP-5055 ``tolerationSeconds``): the pod using the tainted device
keeps running until that time has passed since the taint was added, and is evicted afterwards, its claim released
and unprepared on the node. The rule names one published device of the driver under test (driver, pool, device).

Sources: resource.k8s.io/v1 DeviceToleration.tolerationSeconds ("the period of time the toleration ... tolerates the
taint"; eviction at DeviceTaint.timeAdded + tolerationSeconds), KEP-5055; kube-controller-manager device taint
eviction controller; feature-catalog.md §5.J (TAINT-08).
"""

import pytest

from conformance.api import leftovers, request, timeouts, toleration, waits

pytestmark = [
    pytest.mark.taints,
    pytest.mark.full,
    pytest.mark.kep(5055),
    pytest.mark.requires("api.devicetaintrules", "driver.taints", "allocator.result_tolerations"),
]

TAINT_KEY = "dra-conformance.test/under-test"
TOLERATION_SECONDS = 30
# the hold ends this much before timeAdded + tolerationSeconds: timeAdded has one-second resolution and the
# hold starts after the rule's create returned
MARGIN_S = 5


@pytest.mark.scenario("TAINT-08")
def test_noexecute_taint_tolerated_for_seconds_evicts_only_after_they_passed(
    k8s, tracker, builder, taint_target, node_access
):
    """A running pod whose claim tolerates a NoExecute taint for N seconds stays Running while N seconds have not
    passed since a rule tainted its device, is evicted afterwards, and its claim is released on the node.
    Source: KEP-5055 DeviceToleration.tolerationSeconds; upstream "DeviceTaintRule evicts pod" (delayed)."""
    # given: a running pod whose claim holds one device and tolerates the taint for TOLERATION_SECONDS
    t = taint_target
    tolerates = toleration(TAINT_KEY, operator="Exists", effect="NoExecute", toleration_seconds=TOLERATION_SECONDS)
    claim = tracker.create(builder.claim(requests=[request(selectors=t.selector, tolerations=[tolerates])]))
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim, node_name=t.node)), timeout=timeouts.POD_START)
    # when: a NoExecute rule names that device
    tracker.create(builder.device_taint_rule(key=TAINT_KEY, effect="NoExecute", pool=t.pool, device=t.name))
    # then: the pod runs on until the toleration is nearly over, then it is evicted and its claim released
    waits.pod_stays_running(k8s, pod, duration=TOLERATION_SECONDS - MARGIN_S)
    waits.pod_gone(k8s, pod, timeout=MARGIN_S + timeouts.POD_DELETE)
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    left = leftovers(node_access, t.node, claim)
    assert left.found == [], left.describe()
