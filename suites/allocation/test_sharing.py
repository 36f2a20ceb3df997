"""External ResourceClaims and sharing: one claim used by a pod, by several containers, by several pods.

Sources: upstream test/e2e/dra/dra.go "supports simple pod referencing external resource claim", "supports
inline claim referenced by multiple containers", "supports external claim referenced by multiple pods",
"supports external claim referenced by multiple containers of multiple pods", "supports sharing a claim
concurrently"; resource.k8s.io/v1 ResourceClaim.status.reservedFor.
"""

import pytest

from conformance.api import container, timeouts, waits

pytestmark = [pytest.mark.allocation, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("ALLOC-04")
@pytest.mark.shard_devices()
def test_external_claim_is_used_by_its_pod(k8s, tracker, builder, probe):
    """A pre-created claim is allocated, reserved for the pod that uses it, and its device is visible.
    Source: upstream "supports simple pod referencing external resource claim"."""
    # given: an external claim
    claim = tracker.create(builder.claim())
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: reserved for exactly that pod; the container sees exactly the allocated device
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    assert [r.uid for r in allocated.reserved_for] == [pod.uid], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-03")
@pytest.mark.shard_devices()
def test_claim_shared_by_containers_of_one_pod(k8s, tracker, builder, probe):
    """Two containers of one pod referencing the same claim both see the same device.
    Source: upstream "supports inline claim referenced by multiple containers"."""
    # given: a template
    template = tracker.create(builder.claim_template())
    # when: two containers of a pod reference it
    pod = tracker.create(builder.pod(containers=[container("a", uses=[template]), container("b", uses=[template])]))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: one generated claim; both containers see exactly its device
    assert len(waits.pod_claims(k8s, pod)) == 1, pod.describe()
    shown = [probe.shows_claimed_devices(pod, name) for name in ("a", "b")]
    assert all(shown), "\n".join(s.evidence for s in shown if not s)


@pytest.mark.scenario("ALLOC-05", "ALLOC-09")
@pytest.mark.requires("driver.shared_claims")
@pytest.mark.shard_devices()
def test_claim_shared_by_several_pods(k8s, tracker, builder, probe):
    """Three pods referencing one claim all run at once, the claim is reserved for all three, and all see the
    same device.
    Source: upstream "supports external claim referenced by multiple pods", "supports sharing a claim
    concurrently"."""
    # given: one claim
    claim = tracker.create(builder.claim())
    # when: three pods reference it
    pods = [tracker.create(builder.pod(uses=claim)) for _ in range(3)]
    # then: all run, all are in reservedFor, and all see exactly the claim's device
    pods = [waits.pod_running(k8s, p, timeout=timeouts.POD_START) for p in pods]
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=pods)
    assert {r.uid for r in allocated.reserved_for} == {p.uid for p in pods}, allocated.describe()
    shown = [probe.shows_claimed_devices(p) for p in pods]
    assert all(shown), "\n".join(s.evidence for s in shown if not s)


@pytest.mark.scenario("ALLOC-06")
@pytest.mark.requires("driver.shared_claims")
@pytest.mark.shard_devices()
def test_claim_shared_by_containers_of_several_pods(k8s, tracker, builder, probe):
    """Two pods with two containers each, all referencing one claim, all see the same device.
    Source: upstream "supports external claim referenced by multiple containers of multiple pods"."""
    # given: one claim
    claim = tracker.create(builder.claim())
    # when: two pods with two referencing containers each run
    pods = [
        tracker.create(builder.pod(containers=[container("a", uses=[claim]), container("b", uses=[claim])]))
        for _ in range(2)
    ]
    pods = [waits.pod_running(k8s, p, timeout=timeouts.POD_START) for p in pods]
    # then: the four containers see exactly the claim's device
    shown = [probe.shows_claimed_devices(p, c) for p in pods for c in ("a", "b")]
    assert all(shown), "\n".join(s.evidence for s in shown if not s)
    waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=pods)
