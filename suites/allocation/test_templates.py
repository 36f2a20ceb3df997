"""ResourceClaimTemplates: generated claims, their ownership, lifecycle and restarts.

Sources: upstream test/e2e/dra/dra.go "supports simple pod referencing inline resource claim", "deletes
generated claims when pod is done", "does not delete generated claims when pod is restarting";
resource.k8s.io/v1 ResourceClaimTemplate; annotation resource.kubernetes.io/pod-claim-name.
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.allocation, pytest.mark.standard, pytest.mark.kep(4381)]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@pytest.mark.scenario("ALLOC-02")
@pytest.mark.shard_devices()
def test_template_generates_a_claim_owned_by_the_pod(k8s, tracker, builder, probe):
    """A pod referencing a ResourceClaimTemplate gets a generated claim, owned by the pod, annotated with the
    pod claim name, allocated and reserved for the pod; the container sees the device.
    Source: upstream "supports simple pod referencing inline resource claim"."""
    # given: a template for one device
    template = tracker.create(builder.claim_template())
    # when: a pod references it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=template)), timeout=timeouts.POD_START)
    # then: one generated claim, owned by the pod, allocated and reserved for it
    claim = waits.claim_allocated(k8s, waits.pod_claims(k8s, pod)[0], timeout=timeouts.ALLOCATION, reserved_for=[pod])
    owners = [(o.get("kind"), o.get("uid")) for o in claim.get("metadata.ownerReferences") or []]
    assert owners == [("Pod", pod.uid)], claim.describe()
    assert claim.get("metadata.annotations", {}).get(POD_CLAIM_ANNOTATION) == pod.spec.resource_claims[0].name
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-15")
@pytest.mark.shard_devices()
def test_generated_claim_is_deleted_when_pod_is_done(k8s, tracker, builder):
    """When a pod using a template exits, its generated claim is deallocated and deleted.
    Source: upstream "deletes generated claims when pod is done"."""
    # given: a template and a pod that probes and exits
    template = tracker.create(builder.claim_template())
    pod = tracker.create(builder.pod(uses=template, command=builder.probe_pod_command(then_sleep=False)))
    # when: the pod completes
    pod = waits.pod_succeeded(k8s, pod, timeout=timeouts.POD_START)
    # then: the generated claim disappears
    claim_name = pod.get("status.resourceClaimStatuses.0.resourceClaimName")
    assert claim_name, pod.describe()
    waits.until(
        k8s,
        "ResourceClaim",
        claim_name,
        pod.namespace,
        done=lambda claim: claim is None,
        timeout=timeouts.DEALLOCATION,
        awaited=f"generated claim {claim_name} deleted",
    )


@pytest.mark.scenario("ALLOC-16")
@pytest.mark.shard_devices()
@pytest.mark.long_window  # the kubelet's restart back-off: under xdist it starts early among the sharded tests
def test_generated_claim_survives_container_restarts(k8s, tracker, builder):
    """A crash-looping pod (restartPolicy Always) keeps the same generated claim across restarts.
    Source: upstream "does not delete generated claims when pod is restarting"."""
    # given: a template and a pod whose container exits with an error and is restarted
    template = tracker.create(builder.claim_template())
    pod = tracker.create(builder.pod(uses=template, command=["false"], restart_policy="Always"))
    # when: the container restarted twice
    pod = waits.object_matches(
        k8s,
        pod,
        lambda p: (p.get("status.containerStatuses.0.restartCount") or 0) >= 2,
        timeout=timeouts.POD_START,
        awaited="container restarted twice",
    )
    # then: the generated claim is the same object and still allocated for the pod
    claim = waits.pod_claims(k8s, pod)[0]
    assert claim.allocation and pod.uid in {r.uid for r in claim.reserved_for}, claim.describe()
    assert claim.uid == waits.pod_claims(k8s, k8s.get("Pod", pod.name, pod.namespace))[0].uid
