"""Constraints across the devices of a claim: matchAttribute and distinctAttribute, checked by recomputing
the attribute values from the driver's ResourceSlices (never trusting the allocation).

Sources: resource.k8s.io/v1 DeviceConstraint.matchAttribute / distinctAttribute (KEP-4381, KEP-5075);
upstream "chooses the correct subrequest subject to constraints" (test/e2e/dra/dra.go).
"""

import pytest

from conformance.api import distinct_attribute, match_attribute, request, timeouts, waits

pytestmark = [
    pytest.mark.allocation,
    pytest.mark.standard,
    pytest.mark.kep(4381),
    pytest.mark.requires("driver.multiple_devices"),
]


@pytest.mark.scenario("ALLOC-25")
def test_match_attribute_gives_devices_with_one_value(k8s, tracker, builder, inventory, probe, grouping_attribute):
    """Two devices under matchAttribute on a grouping attribute (shared by some devices, not all) carry the
    same published value.
    Source: resource.k8s.io/v1 DeviceConstraint.matchAttribute."""
    # given: an attribute whose value groups devices of a node
    name = grouping_attribute
    claim = tracker.create(builder.claim(count=2, constraints=[match_attribute(name)]))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: both devices publish the same value, and both are visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert len({inventory.of(r).attributes[name] for r in allocated.results}) == 1, allocated.describe()
    _assert_pod_shows(probe, inventory, pod, allocated)


@pytest.mark.scenario("ALLOC-25")
def test_match_attribute_across_two_requests(k8s, tracker, builder, inventory, probe, grouping_attribute):
    """A matchAttribute constraint naming two requests makes their devices share the value.
    Source: resource.k8s.io/v1 DeviceConstraint.requests."""
    # given: two requests constrained together on a grouping attribute
    name = grouping_attribute
    claim = tracker.create(
        builder.claim(
            requests=[request("first"), request("second")],
            constraints=[match_attribute(name, requests=["first", "second"])],
        )
    )
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the two requests' devices share the value
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert sorted(r.request for r in allocated.results) == ["first", "second"], allocated.describe()
    assert len({inventory.of(r).attributes[name] for r in allocated.results}) == 1, allocated.describe()
    _assert_pod_shows(probe, inventory, pod, allocated)


@pytest.mark.scenario("ALLOC-25")
def test_match_attribute_on_unique_values_is_unsatisfiable(k8s, tracker, builder, unique_per_result):
    """matchAttribute on an attribute that is unique per device cannot hold for two devices: the pod stays
    unschedulable with the scheduler's reason and the claim unallocated. Devices that allow multiple allocations
    are left out (two shares of one device share every value: KEP-5075).
    Source: resource.k8s.io/v1 DeviceConstraint.matchAttribute; scheduler "cannot allocate all claims"."""
    # given: a claim for two devices (each allocated once) that must share a per-device unique value
    unique, allocated_once = unique_per_result
    claim = tracker.create(
        builder.claim(count=2, selectors=allocated_once or None, constraints=[match_attribute(unique)])
    )
    # when: a pod uses it
    pod = tracker.create(builder.pod(uses=claim))
    # then: unschedulable, claim unallocated
    waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation


@pytest.mark.scenario("ALLOC-25", "CAP-02")
@pytest.mark.requires("allocator.distinct_attribute")
def test_distinct_attribute_gives_devices_with_different_values(
    k8s, tracker, builder, inventory, probe, grouping_attribute
):
    """Two devices under distinctAttribute on a grouping attribute carry different published values.
    Source: resource.k8s.io/v1 DeviceConstraint.distinctAttribute (KEP-5075)."""
    # given: a grouping attribute and a claim for two devices that must differ in it
    name = grouping_attribute
    claim = tracker.create(builder.claim(count=2, constraints=[distinct_attribute(name)]))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the values differ, both devices are visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert len({inventory.of(r).attributes[name] for r in allocated.results}) == 2, allocated.describe()
    _assert_pod_shows(probe, inventory, pod, allocated)


@pytest.mark.scenario("ALLOC-25", "CAP-02")
@pytest.mark.requires("allocator.distinct_attribute")
def test_distinct_attribute_across_two_requests(k8s, tracker, builder, inventory, probe, grouping_attribute):
    """A distinctAttribute constraint naming two one-device requests gives them devices with different
    published values.
    Source: resource.k8s.io/v1 DeviceConstraint.distinctAttribute with requests (KEP-5075)."""
    # given: two requests constrained to differ on a grouping attribute
    name = grouping_attribute
    claim = tracker.create(
        builder.claim(
            requests=[request("first"), request("second")],
            constraints=[distinct_attribute(name, requests=["first", "second"])],
        )
    )
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the two devices publish different values, both visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert len({inventory.of(r).attributes[name] for r in allocated.results}) == 2, allocated.describe()
    _assert_pod_shows(probe, inventory, pod, allocated)


def _assert_pod_shows(probe, inventory, pod, allocated) -> None:
    """The pod's container shows exactly the allocated devices among those published on its node."""
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence
