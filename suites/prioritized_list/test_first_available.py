"""firstAvailable (prioritized list, KEP-4816): the scheduler picks the first subrequest it can satisfy, in
order, under the claim's constraints, and names the choice ``<request>/<subrequest>`` in the results.

Sources: upstream test/e2e/dra/dra.go "selects the first subrequest that can be satisfied", "chooses the
correct subrequest subject to constraints"; resource.k8s.io/v1 DeviceRequest.firstAvailable.
"""

import pytest

from conformance.api import NEVER_MATCHES, first_available, match_attribute, subrequest, timeouts, waits

pytestmark = [
    pytest.mark.prioritized_list,
    pytest.mark.standard,
    pytest.mark.kep(4816),
    pytest.mark.requires("gate.DRAPrioritizedList", "driver.prioritized_list"),
]


@pytest.mark.scenario("PL-01")
@pytest.mark.shard_devices()
def test_first_subrequest_is_chosen_when_it_fits(k8s, tracker, builder, probe):
    """When the first subrequest can be satisfied it is chosen, even though later ones could be too.
    Source: resource.k8s.io/v1 DeviceRequest.firstAvailable (order is preference)."""
    # given: subrequests "one" then "any" that both fit
    claim = tracker.create(builder.claim(requests=[first_available("gpu", subrequest("one"), subrequest("any"))]))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the result names gpu/one; the container sees exactly its device
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.request for r in allocated.results] == ["gpu/one"], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("PL-01")
@pytest.mark.requires("driver.multiple_devices")
def test_falls_back_in_order_to_the_first_satisfiable_subrequest(
    k8s, tracker, builder, inventory, probe, allocated_once, too_many
):
    """Subrequests that cannot be satisfied (more devices than its selectors match on any node, a selector
    matching nothing) are skipped in order; the first satisfiable one (two devices) is chosen over a later one
    (one device). Source: upstream "selects the first subrequest that can be satisfied"."""
    # given: too-many, none, two, one (kept to devices allocated once: shares would satisfy too-many, KEP-5075;
    # too-many to a few devices per node, which the allocator rules out in a few steps, not the whole node)
    once = allocated_once.selector or None
    request = first_available(
        "gpu",
        subrequest("too-many", count=too_many.count, selectors=list(too_many.selectors) or None),
        subrequest("none", selectors=NEVER_MATCHES),
        subrequest("two", count=2, selectors=once),
        subrequest("one", selectors=once),
    )
    claim = tracker.create(builder.claim(requests=[request]))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: both results name gpu/two; the container sees two devices
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.request for r in allocated.results] == ["gpu/two", "gpu/two"], allocated.describe()
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence


@pytest.mark.scenario("PL-03")
@pytest.mark.requires("driver.multiple_devices")
def test_constraints_on_the_parent_request_steer_the_choice(k8s, tracker, builder, probe, unique_per_result):
    """A matchAttribute constraint on the parent request applies to its subrequests: two devices that must
    share a per-device unique value cannot exist, so the one-device subrequest is chosen.
    Source: upstream "chooses the correct subrequest subject to constraints"; DeviceConstraint.requests."""
    # given: "two" (impossible under the constraint) then "one", on devices allocated once (two shares of one
    # device would share the unique value, KEP-5075)
    unique_attribute, once = unique_per_result
    request = first_available(
        "gpu", subrequest("two", count=2, selectors=once or None), subrequest("one", selectors=once or None)
    )
    claim = tracker.create(builder.claim(requests=[request], constraints=[match_attribute(unique_attribute, ["gpu"])]))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: gpu/one was chosen and the container sees exactly its device
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.request for r in allocated.results] == ["gpu/one"], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("PL-01")
def test_no_satisfiable_subrequest_keeps_pod_unschedulable(k8s, tracker, builder):
    """When no subrequest can be satisfied the pod stays unschedulable and the claim unallocated.
    Source: resource.k8s.io/v1 DeviceRequest.firstAvailable; scheduler "cannot allocate all claims"."""
    # given: two impossible subrequests
    request = first_available(
        "gpu", subrequest("none", selectors=NEVER_MATCHES), subrequest("still-none", selectors=NEVER_MATCHES)
    )
    claim = tracker.create(builder.claim(requests=[request]))
    # when: a pod uses the claim
    pod = tracker.create(builder.pod(uses=claim))
    # then: unschedulable
    waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation
