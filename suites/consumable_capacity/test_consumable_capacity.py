"""Consumable capacity: a device published with ``allowMultipleAllocations`` is shared by several claims,
each allocation a share with its own ``shareID`` and the ``consumedCapacity`` it takes, never more in total
than the device's capacity. The device and amounts its ``requestPolicy`` accepts are picked from the
driver's own ResourceSlices.

What the tests see: CAP-01..03 judge what the driver published (capacity, requestPolicy) and what the scheduler
recorded (shareID, consumedCapacity), plus that each pod shows the device; whether the driver really limits a
share to its consumedCapacity they cannot see. CAP-04 shows what the driver granted, where the profile names how
a container shows it (``consumed_capacity_signal``); without it that stays publish-only ("not claimed").

Sources: KEP-5075 (resource.k8s.io/v1 Device.allowMultipleAllocations, DeviceCapacity.requestPolicy,
ExactDeviceRequest.capacity, DeviceRequestAllocationResult.shareID / consumedCapacity); upstream "must allow
multiple allocations and consume capacity" (test/e2e/dra/dra.go); feature-catalog §5.K.
"""

import pytest

from conformance.api import cdi, request, timeouts, waits

pytestmark = [
    pytest.mark.consumable_capacity,
    pytest.mark.full,
    pytest.mark.kep(5075),
    pytest.mark.xdist_group("dra-cluster-state"),  # pins devices: fills one counter set / one device's capacity
    pytest.mark.requires("driver.consumable_capacity"),
]


def _share_claim(builder, device, amount):
    """A claim for ``amount`` of the shared device's capacity."""
    return builder.claim(requests=[request("device", selectors=device.selector, capacity=device.requests(amount))])


@pytest.mark.scenario("CAP-01", "CAP-02", "CAP-03", "PREP-08")
def test_two_claims_share_one_device_with_distinct_share_ids(k8s, tracker, builder, inventory, probe, shared_device):
    """Two claims for part of one multi-allocatable device are both allocated on it, with distinct shareIDs
    and their consumedCapacity recorded within the capacity, and both pods see the device.
    Source: KEP-5075 shareID / consumedCapacity; upstream "must allow multiple allocations"."""
    # given: two claims, each for a small share of the same device
    dev = shared_device
    claims = [tracker.create(_share_claim(builder, dev, dev.small)) for _ in range(2)]
    # when: a pod uses each
    pods = [waits.pod_running(k8s, tracker.create(builder.pod(uses=c)), timeout=timeouts.POD_START) for c in claims]
    # then: both hold a share of that device, distinct, with the capacity they took recorded
    allocated = [waits.claim_allocated(k8s, c, timeout=timeouts.ALLOCATION) for c in claims]
    results = [r for claim in allocated for r in claim.results]
    assert {(r.pool, r.device) for r in results} == {(dev.pool, dev.name)}, [c.describe() for c in allocated]
    assert len({r.shareID for r in results if r.shareID}) == 2, [c.describe() for c in allocated]
    consumed = [r.consumedCapacity[dev.key] if r.consumedCapacity else None for r in results]
    assert None not in consumed and dev.fits(*consumed), [c.describe() for c in allocated]
    for pod, claim in zip(pods, allocated, strict=True):
        shown, evidence = probe.shows_allocation(pod, claim, inventory)
        assert shown, evidence


@pytest.mark.scenario("CAP-01", "PREP-08")
@pytest.mark.requires("node_access")
def test_unpreparing_one_share_leaves_the_other_prepared(k8s, tracker, builder, probe, node_access, shared_device):
    """Two claims share one multi-allocatable device on a node; deleting the pod of one unprepares only that
    claim (its CDI specs removed), while the other claim's specs stay and its pod still sees the device.
    Source: KEP-5075 (each share is its own allocation result); driver contract NodeUnprepareResources."""
    # given: two running pods, each with a claim for a small share of the same device, both prepared
    dev = shared_device
    claims = [tracker.create(_share_claim(builder, dev, dev.small)) for _ in range(2)]
    pods = [waits.pod_running(k8s, tracker.create(builder.pod(uses=c)), timeout=timeouts.POD_START) for c in claims]
    node = pods[0].spec.node_name
    assert all(cdi.claim_specs(node_access, node, c) for c in claims), node_access.cdi_specs(node)
    # when: the first pod is deleted and gone
    k8s.delete("Pod", pods[0].name, pods[0].namespace)
    waits.pod_gone(k8s, pods[0], timeout=timeouts.POD_DELETE)
    # then: the first claim's specs are removed, the second's stay, and a fresh pod with it sees the device
    gone = waits.poll(
        lambda: not cdi.claim_specs(node_access, node, claims[0]), timeout=timeouts.KUBELET_RETRY, interval=1.0
    )
    assert gone and cdi.claim_specs(node_access, node, claims[1]), node_access.cdi_specs(node)
    fresh = waits.pod_running(k8s, tracker.create(builder.pod(uses=claims[1])), timeout=timeouts.POD_START)
    shown, evidence = probe.shows_claimed_devices(fresh)
    assert shown, evidence


@pytest.mark.scenario("CAP-01", "CAP-02")
def test_request_over_remaining_capacity_stays_unallocated(k8s, tracker, builder, shared_device):
    """While a pod holds most of a multi-allocatable device's capacity, a claim for more than what remains
    stays unallocated with the scheduler's reason.
    Source: KEP-5075 capacity accounting; upstream "must allow multiple allocations and consume capacity"."""
    # given: a running pod whose claim takes a large share of the device
    dev = shared_device
    first = tracker.create(_share_claim(builder, dev, dev.large))
    waits.pod_running(k8s, tracker.create(builder.pod(uses=first)), timeout=timeouts.POD_START)
    # when: another pod asks for more than the rest
    claim = tracker.create(_share_claim(builder, dev, dev.small))
    pod = tracker.create(builder.pod(uses=claim))
    # then: the scheduler refuses it and the claim stays unallocated
    waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation, dev


@pytest.mark.scenario("CAP-04")
@pytest.mark.requires("driver.consumed_capacity_signal")
def test_container_shows_the_capacity_its_share_was_granted(k8s, tracker, builder, probe, shared_device):
    """A pod whose claim takes a small share of a multi-allocatable device shows the consumedCapacity its
    allocation records (profile ``consumed_capacity_signal``), not the device's whole capacity. The other tests
    of this module see only what the driver published and the scheduler recorded; this one sees what the
    driver granted the container.
    Source: KEP-5075 DeviceRequestAllocationResult.consumedCapacity; issue 24 §3 (probe-level checks)."""
    # given: a claim for a small share of the device
    dev = shared_device
    claim = tracker.create(_share_claim(builder, dev, dev.small))
    # when: its pod runs
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the container shows the capacity the allocation recorded for its share
    (result,) = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION).results
    assert result.consumedCapacity and dev.key in result.consumedCapacity, result
    shown, evidence = probe.shows_consumed(pod, result.consumedCapacity[dev.key])
    assert shown, f"share of {dev.name} consuming {result.consumedCapacity[dev.key]}: {evidence}"
