"""NodeUnprepareResources when the API objects are gone: a pod force-deleted (grace period 0: the Pod object is
gone at once, the kubelet stops its containers afterwards) and a claim deleted before its unprepare ran. The
driver works from its own state, so it still unprepares and the node ends holding nothing of the claim.

Sources: upstream test/e2e/dra/dra.go "must unprepare resources for force-deleted pod"; dra-protocols.md §2.4
(unprepare needs only the claim UID; the driver must not depend on the API object); KEP-4381.
"""

import pytest

from conformance.api import cdi, timeouts, unprepared, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("PREP-10")]


@pytest.mark.requires("driver.cdi", "node_access")
def test_force_deleted_pod_has_its_claim_unprepared(k8s, tracker, builder, node_access):
    """A running pod deleted with grace period 0: its claim is deallocated and the node ends holding nothing
    of it (no CDI spec naming its UID, no PodResources entry).
    Source: upstream "must unprepare resources for force-deleted pod"."""
    # given: a running pod whose claim is prepared on its node
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the pod is force-deleted
    k8s.delete("Pod", pod.name, pod.namespace, grace_seconds=0)
    # then: the claim is deallocated and unprepared on the node
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    left = unprepared(node_access, node, claim, timeout=timeouts.DEALLOCATION)
    assert left.found == [], left.describe()


@pytest.mark.requires("driver.cdi", "node_access")
def test_claim_deleted_before_its_unprepare_is_still_unprepared(k8s, tracker, builder, node_access):
    """A running pod force-deleted and its claim deleted right after, so the claim object is gone before the
    kubelet (which stops the containers first) calls NodeUnprepareResources: the node still ends holding
    nothing of the claim.
    Source: upstream "must unprepare resources for force-deleted pod"; dra-protocols.md §2.4."""
    # given: a running pod whose claim is prepared on its node
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the pod is force-deleted and the claim deleted, and the claim is gone
    k8s.delete("Pod", pod.name, pod.namespace, grace_seconds=0)
    k8s.delete("ResourceClaim", claim.name, claim.namespace)
    waits.claim_gone(k8s, claim, timeout=timeouts.DEALLOCATION)
    # then: the node holds nothing of it
    left = unprepared(node_access, node, claim, timeout=timeouts.DEALLOCATION)
    assert left.found == [], left.describe()
