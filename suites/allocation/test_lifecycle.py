"""Claim lifecycle: reservedFor shrinks as consumers go, the allocation is removed after the last one, and
the freed devices are allocatable again.

Sources: upstream test/e2e/dra/dra.go "must deallocate after use", "removes reservation from claim when pod is
done", "supports reusing resources"; resource.k8s.io/v1 ResourceClaim.status (KEP-4381).
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.allocation, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("ALLOC-14")
@pytest.mark.requires("driver.shared_claims")
@pytest.mark.shard_devices()
def test_reserved_for_drops_each_deleted_pod(k8s, tracker, builder):
    """When one of two pods sharing a claim is deleted, reservedFor lists only the remaining pod and the
    allocation stays.
    Source: upstream "removes reservation from claim when pod is done"; ResourceClaim.status.reservedFor."""
    # given: a claim shared by two running pods
    claim = tracker.create(builder.claim())
    first, second = [
        waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START) for _ in range(2)
    ]
    # when: the first pod is deleted
    k8s.delete("Pod", first.name, first.namespace)
    waits.pod_gone(k8s, first, timeout=timeouts.POD_DELETE)
    # then: only the second is reserved and the device allocation is unchanged
    after = waits.object_matches(
        k8s,
        claim,
        lambda c: {r.uid for r in c.reserved_for} == {second.uid},
        timeout=timeouts.DEALLOCATION,
        awaited="reservedFor == [second pod]",
    )
    assert after.results and after.results[0].device, after.describe()


@pytest.mark.scenario("ALLOC-13")
@pytest.mark.shard_devices()
def test_claim_is_deallocated_after_its_last_pod(k8s, tracker, builder):
    """An external claim keeps its object but loses allocation and reservedFor once its only pod is deleted.
    Source: upstream "must deallocate after use"."""
    # given: a claim used by a running pod
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    # when: the pod is deleted
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # then: the claim still exists, without allocation or reservation
    after = waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    assert after is not None and after.uid == claim.uid, "the external claim must not be deleted"


@pytest.mark.scenario("ALLOC-08", "ALLOC-24")
@pytest.mark.xdist_group("dra-cluster-state")  # takes a whole node
def test_devices_are_reused_by_pods_one_after_another(k8s, tracker, builder, inventory, probe, together_all):
    """Three pods, each needing every device of the same node (those that can be allocated together)
    through a template, run one after another: each deletion frees the devices for the next pod, which
    gets the same devices.
    Source: upstream "supports reusing resources"; integration "ShareResourceClaimSequentially"."""
    # given: a template asking for all devices, and a node
    template = tracker.create(builder.claim_template(allocation_mode="All", selectors=together_all.selector))
    node = inventory.nodes()[0]
    seen = []
    # when: pods use it in turn on that node, each deleted before the next
    for _ in range(3):
        pod = waits.pod_running(
            k8s, tracker.create(builder.pod(uses=template, node_name=node)), timeout=timeouts.POD_START
        )
        got = sorted(r.device for r in waits.pod_claims(k8s, pod)[0].results)
        seen.append((got, probe.shows_devices(pod, got, inventory.names_on(node))[0]))
        k8s.delete("Pod", pod.name, pod.namespace)
        waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # then: every pod got, and saw, every device of the node
    devices = sorted(together_all.names_on(node))
    assert seen == [(devices, True)] * 3, seen
