"""NodeUnprepareResources when the API objects are gone: a pod force-deleted (grace period 0: the Pod object is
gone at once, the kubelet stops its containers afterwards) and a claim deleted before its unprepare ran. The
driver works from its own state, so it still unprepares, the node ends holding nothing of the claim, and the
device is free again: a new claim pinned to it (a CEL selector matching only that device) runs on that node.

Sources: upstream test/e2e/dra/dra.go "must unprepare resources for force-deleted pod"; dra-protocols.md §2.4
(unprepare needs only the claim UID; the driver must not depend on the API object); KEP-4381; kubelet
pkg/kubelet/pod_workers.go (a force-deleted pod's containers are still stopped on the node before its
NodeUnprepareResources).
"""

import pytest

from conformance.api import cdi, timeouts, unprepared, waits, with_field

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("PREP-10")]

# the pod's terminationGracePeriodSeconds. A force-deleted pod's last state says deletionGracePeriodSeconds 0, so
# the kubelet gives its container the 2 s minimum (kuberuntime minimumGracePeriodInSeconds) before SIGKILL; the
# container ignores SIGTERM, so its unprepare comes 2 s or more after the deletion, while the claim goes in well
# under a second; the test checks the order happened (with a container ending at once on SIGTERM it was a race
# of about a second, which the kubelet won once in session 18)
UNPREPARE_AFTER_S = 20
IGNORES_SIGTERM = ["sh", "-c", "trap '' TERM; sleep 100000"]


@pytest.mark.shard_devices()
@pytest.mark.requires("driver.cdi", "node_access")
def test_force_deleted_pod_has_its_claim_unprepared(k8s, tracker, builder, node_access, inventory):
    """A running pod deleted with grace period 0: its claim is deallocated, the node ends holding nothing
    of it (no CDI spec naming its UID, no PodResources entry), and its device runs a new claim's pod.
    Source: upstream "must unprepare resources for force-deleted pod"."""
    # given: a running pod whose claim is prepared on its node
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, allocated = pod.spec.node_name, waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the pod is force-deleted
    k8s.delete("Pod", pod.name, pod.namespace, grace_seconds=0)
    # then: the claim is deallocated and unprepared on the node, and its device is free again
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    left = unprepared(node_access, node, claim, timeout=timeouts.DEALLOCATION)
    assert left.found == [], left.describe()
    same_device = inventory.selector_for(inventory.of(allocated.results[0]), on_node=True)
    again = tracker.create(builder.claim(selectors=same_device))
    waits.pod_running(k8s, tracker.create(builder.pod(uses=again, node_name=node)), timeout=timeouts.POD_START)


@pytest.mark.shard_devices()
@pytest.mark.requires("driver.cdi", "node_access")
def test_claim_deleted_before_its_unprepare_is_still_unprepared(k8s, tracker, builder, node_access, inventory):
    """A running pod force-deleted and its claim deleted right after: the claim object is gone while the
    kubelet still stops the containers, which the test checks (the claim's CDI spec is still on the node when
    the claim is gone, so NodeUnprepareResources came later). The node then holds nothing of the claim and its
    device runs a new claim's pod.
    Source: upstream "must unprepare resources for force-deleted pod"; dra-protocols.md §2.4."""
    # given: a running pod whose container ignores SIGTERM (stopped by SIGKILL), its claim prepared on its node
    claim = tracker.create(builder.claim())
    slow = with_field(
        builder.pod(uses=claim, command=IGNORES_SIGTERM), "spec.terminationGracePeriodSeconds", UNPREPARE_AFTER_S
    )
    pod = waits.pod_running(k8s, tracker.create(slow), timeout=timeouts.POD_START)
    node, allocated = pod.spec.node_name, waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    # when: the pod is force-deleted and the claim deleted, and the claim is gone before the unprepare
    k8s.delete("Pod", pod.name, pod.namespace, grace_seconds=0)
    k8s.delete("ResourceClaim", claim.name, claim.namespace)
    waits.claim_gone(k8s, claim, timeout=timeouts.DEALLOCATION)
    assert cdi.claim_specs(node_access, node, claim), f"claim {claim.name} was unprepared on {node} before it was gone"
    # then: the node holds nothing of it, and its device is free again
    left = unprepared(node_access, node, claim, timeout=timeouts.DEALLOCATION)
    assert left.found == [], left.describe()
    same_device = inventory.selector_for(inventory.of(allocated.results[0]), on_node=True)
    again = tracker.create(builder.claim(selectors=same_device))
    waits.pod_running(k8s, tracker.create(builder.pod(uses=again, node_name=node)), timeout=timeouts.POD_START)
