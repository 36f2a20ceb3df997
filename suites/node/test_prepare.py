"""NodePrepareResources / NodeUnprepareResources seen from the node: CDI specs while prepared, cleanup after,
pod-level claims prepared even when no container uses them, init containers.

Sources: upstream test/e2e/dra/dra.go "must call NodePrepareResources even if not used by any container",
"supports init containers"; CDI spec directories (dra-protocols.md §4); driver contract §6.3-6.5.
"""

import pytest

from conformance.api import cdi, container, removed_and_unprepared, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("PREP-01")
@pytest.mark.requires("driver.cdi", "node_access")
@pytest.mark.shard_devices()
def test_pod_level_claim_without_container_reference_is_prepared(k8s, tracker, builder, probe, node_access):
    """A claim listed in the pod's resourceClaims but referenced by no container is still prepared (a CDI spec
    for it exists on the node) while no container sees its device.
    Source: upstream "must call NodePrepareResources even if not used by any container"."""
    # given: a claim that the pod lists but no container references
    claim = tracker.create(builder.claim())
    # when: a pod listing it runs
    pod = waits.pod_running(k8s, tracker.create(builder.pod(unreferenced=[claim])), timeout=timeouts.POD_START)
    # then: the claim is reserved for it, the node holds its CDI spec, and the container sees nothing
    waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    specs = node_access.cdi_specs(pod.spec.node_name)
    assert cdi.claim_specs(node_access, pod.spec.node_name, claim), (
        f"no CDI spec for claim {claim.name} on node {pod.spec.node_name} while its pod runs; "
        f"specs there: {sorted(specs) or 'none'}"
    )
    shown, evidence = probe.shows_no_device(pod)
    assert shown, evidence


@pytest.mark.scenario("PREP-10")
@pytest.mark.requires("driver.cdi", "node_access")
@pytest.mark.shard_devices()
def test_cdi_spec_exists_while_prepared_and_is_removed_after(k8s, tracker, builder, node_access):
    """The driver's CDI spec for a claim exists on the node while its pod runs; after the pod is deleted and
    the claim unprepared the node keeps nothing of it (no CDI spec naming it, no PodResources entry).
    Source: driver contract §6.3/§6.4 (NodeUnprepareResources cleans up); CDI spec directories."""
    # given: a running pod with a claim
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the pod is deleted
    k8s.delete("Pod", pod.name, pod.namespace)
    left = removed_and_unprepared(k8s, node_access, pod, claim, timeout=timeouts.POD_DELETE)
    # then: the node holds nothing of the claim
    assert left.found == [], left.describe()


@pytest.mark.scenario("PREP-10")
@pytest.mark.requires("driver.cdi", "node_access")
@pytest.mark.shard_devices(2)
def test_unprepare_of_one_claim_leaves_the_other_claims_cdi_spec(k8s, tracker, builder, node_access):
    """Two claims prepared on one node: unpreparing the first (its pod deleted) leaves the second claim's CDI
    spec on the node, so the second pod's containers still get their device when they restart.
    Source: driver contract §6.4 (NodeUnprepareResources cleans up only the claims it names); upstream
    test/e2e/dra/test-driver kubeletplugin.go (one CDI spec file per claim)."""
    # given: two running pods on one node, each with its own claim
    first = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=tracker.create(builder.claim()))), timeout=timeouts.POD_START
    )
    node = first.spec.node_name
    kept = tracker.create(builder.claim())
    waits.pod_running(k8s, tracker.create(builder.pod(uses=kept, node_name=node)), timeout=timeouts.POD_START)
    assert cdi.claim_specs(node_access, node, kept), node_access.cdi_specs(node)
    # when: the first pod is deleted and its claim unprepared
    k8s.delete("Pod", first.name, first.namespace)
    waits.pod_gone(k8s, first, timeout=timeouts.POD_DELETE)
    # then: the second claim's CDI spec is still on the node
    specs = node_access.cdi_specs(node)
    assert specs and cdi.claim_specs(node_access, node, kept), (
        f"the CDI spec of claim {kept.name} (UID {kept.uid}) vanished from node {node} when another claim was "
        f"unprepared; the node's CDI specs now: {sorted(specs)}"
    )


@pytest.mark.scenario("PREP-03")
@pytest.mark.shard_devices()
@pytest.mark.long_window  # the consistently-pending window: under xdist it starts early among the sharded tests
def test_pod_bound_to_node_with_unallocated_claim_does_not_run(k8s, tracker, builder, inventory):
    """A pod bound to a node by spec.nodeName (scheduler bypassed) whose claim is not allocated stays
    Pending: the kubelet never starts a pod its claim is not reserved for.
    Source: upstream "must not run a pod if a claim is not ready"; ResourceClaim.status.reservedFor."""
    # given: a claim nobody allocated
    claim = tracker.create(builder.claim())
    # when: a pod using it is bound straight to a driver node
    pod = tracker.create(builder.pod(uses=claim, node_name=inventory.nodes()[0], bypass_scheduler=True))
    # then: it does not start and the claim stays unallocated
    phase = waits.stays_equal(
        lambda: k8s.get("Pod", pod.name, pod.namespace).phase, duration=timeouts.CONSISTENTLY_PENDING
    )
    assert phase == "Pending", k8s.get("Pod", pod.name, pod.namespace).describe()
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation


@pytest.mark.scenario("ALLOC-07")
@pytest.mark.shard_devices()
def test_init_container_sees_the_claim(k8s, tracker, builder, probe):
    """An init container referencing the claim sees the device before the main container starts.
    Source: upstream "supports init containers" / "supports init containers with external claims"."""
    # given: a claim
    claim = tracker.create(builder.claim())
    # when: an init container and the main container both reference it
    init = container("init", uses=[claim], command=builder.probe_pod_command(then_sleep=False))
    pod = tracker.create(builder.pod(containers=[container("main", uses=[claim])], init_containers=[init]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: both saw exactly the claim's device
    for name in ("init", "main"):
        shown, evidence = probe.shows_claimed_devices(pod, name)
        assert shown, evidence


@pytest.mark.scenario("ALLOC-07")
@pytest.mark.shard_devices()
def test_sidecar_container_sees_the_claim(k8s, tracker, builder, probe):
    """A sidecar (an init container with restartPolicy Always, which keeps running next to the main
    container) referencing the claim sees the device, as does the main container.
    Source: upstream test/e2e/dra/dra.go "supports sidecar containers"; KEP-753 restartable init containers."""
    # given: a claim
    claim = tracker.create(builder.claim())
    # when: a sidecar and the main container both reference it
    sidecar = container("sidecar", uses=[claim], restart_policy="Always")
    pod = tracker.create(builder.pod(containers=[container("main", uses=[claim])], init_containers=[sidecar]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: both see exactly the claim's device
    for name in ("sidecar", "main"):
        shown, evidence = probe.shows_claimed_devices(pod, name)
        assert shown, evidence
