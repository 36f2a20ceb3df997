"""The tolerations of a request are copied into its allocation result, so the device taint manager can judge
the claim later against taints added after the allocation.

Sources: resource.k8s.io/v1 DeviceRequestAllocationResult.tolerations ("a copy of all tolerations specified in
the request at the time when the device got allocated"), KEP-5055; feature-catalog.md §5.J (TAINT-02).
"""

import pytest

from conformance.api import request, timeouts, toleration, waits

pytestmark = [
    pytest.mark.taints,
    pytest.mark.full,
    pytest.mark.kep(5055),
    pytest.mark.requires("driver.taints", "allocator.result_tolerations"),
]

TAINT_KEY = "dra-conformance.test/tolerated"


@pytest.mark.scenario("TAINT-02")
@pytest.mark.shard_devices()
def test_allocation_result_carries_the_request_tolerations(k8s, tracker, builder):
    """A claim whose request carries tolerations is allocated with those tolerations in its result.
    Source: resource.k8s.io/v1 DeviceRequestAllocationResult.tolerations (KEP-5055)."""
    # given: a claim for one device of the driver whose request tolerates two taints
    tolerations = [
        toleration(TAINT_KEY, operator="Exists", effect="NoSchedule"),
        toleration(TAINT_KEY, value="maintenance", effect="NoExecute", toleration_seconds=60),
    ]
    claim = tracker.create(builder.claim(requests=[request(tolerations=tolerations)]))
    # when: a pod uses it
    waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the allocation result carries exactly those tolerations
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.get("tolerations") for r in allocated.results] == [tolerations], allocated.describe()
