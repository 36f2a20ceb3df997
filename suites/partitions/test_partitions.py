"""Partitionable devices: devices drawing on one shared counter set (e.g. a GPU and its MIG-like partitions)
are never allocated past the counters, a whole device and its partition never at once, and a container
gets exactly the partition it was allocated. The devices are picked from the driver's own ResourceSlices
(``sharedCounters`` / ``consumesCounters``); the module's allocation checks recompute the counters.

Sources: KEP-4815 (resource.k8s.io/v1 ResourceSlice.spec.sharedCounters, Device.consumesCounters); upstream
"must consume and free up counters" (test/e2e/dra/dra.go); feature-catalog §5.I.
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [
    pytest.mark.partitions,
    pytest.mark.full,
    pytest.mark.kep(4815),
    pytest.mark.xdist_group("dra-cluster-state"),  # pins devices: fills one counter set / one device's capacity
    pytest.mark.requires("driver.partitions"),
]


@pytest.mark.scenario("PART-01")
def test_partitions_never_over_allocate_their_counter_set(k8s, tracker, builder, inventory, partition_packing):
    """Partitions of one counter set that its published counters say fit together all run together; a claim
    for one more device of the set (a leftover partition, else the whole device), which would consume past the
    shared counters, stays unallocated with the scheduler's reason. A set whose devices all fit together has no
    such device: then only the first half applies.
    Source: KEP-4815 sharedCounters / consumesCounters; upstream "must consume and free up counters"."""
    # given: one claim per partition that fits the counter set, each pinned to its device
    pack = partition_packing
    claims = [tracker.create(builder.claim(selectors=inventory.selector_for(d))) for d in pack.fit]
    # when: their pods run together
    for claim in claims:
        waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: a pod asking for one more device of the same counter set is refused and its claim stays unallocated
    if pack.extra is not None:
        extra = tracker.create(builder.claim(selectors=inventory.selector_for(pack.extra)))
        pod = tracker.create(builder.pod(uses=extra))
        waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
        assert not k8s.get("ResourceClaim", extra.name, extra.namespace).allocation, pack


@pytest.mark.scenario("PART-01")
def test_whole_device_and_its_partition_are_never_both_allocated(k8s, tracker, builder, inventory, whole_and_partition):
    """While a pod holds a device that takes the counters a partition of its set needs (the whole device, or a
    larger partition overlapping it), a claim for that partition stays unallocated; once the pod and its claim
    are gone, the partition is allocated and its pod runs.
    Source: KEP-4815; upstream "must consume and free up counters" (second pod runs after the first)."""
    # given: a pod running on the whole device
    whole, part = whole_and_partition
    first_claim = tracker.create(builder.claim(selectors=inventory.selector_for(whole)))
    first = waits.pod_running(k8s, tracker.create(builder.pod(uses=first_claim)), timeout=timeouts.POD_START)
    # when: a pod asks for a partition of the same counter set
    claim = tracker.create(builder.claim(selectors=inventory.selector_for(part)))
    second = tracker.create(builder.pod(uses=claim))
    # then: refused while the whole device is held, allocated and running once it is released
    waits.pod_unschedulable_with(k8s, second, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    k8s.delete("Pod", first.name, first.namespace)
    k8s.delete("ResourceClaim", first_claim.name, first_claim.namespace)
    waits.claim_gone(k8s, first_claim, timeout=timeouts.DEALLOCATION)
    waits.pod_running(k8s, second, timeout=timeouts.POD_START)


@pytest.mark.scenario("PART-01")
def test_container_sees_exactly_its_partition(k8s, tracker, builder, inventory, probe, partition):
    """A pod whose claim holds one partition sees that partition, by name, and no other device (not its
    parent). Source: KEP-4815; driver contract: prepared devices are the allocation results."""
    # given: a claim pinned to one partition
    claim = tracker.create(builder.claim(selectors=inventory.selector_for(partition)))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the claim holds that partition and the container shows exactly it
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [(r.pool, r.device) for r in allocated.results] == [partition.key], allocated.describe()
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence
