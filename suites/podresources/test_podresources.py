"""The kubelet PodResources API (v1 List/Get) reports DRA claims per container, matching the allocation and
the CDI devices the driver prepared.

Sources: KEP-3695 (KubeletPodResourcesDynamicResources, KubeletPodResourcesGet); kubelet
pkg/kubelet/apis/podresources/server_v1.go; dra-protocols.md §3.4 (compare CDI IDs as sets).
"""

import pytest

from conformance.api import (
    PodResourcesError,
    allocatable_device_ids,
    allocated_devices,
    cdi,
    claims_by_container,
    container,
    for_claim,
    reported_cdi_ids,
    reported_devices,
    timeouts,
    waits,
)

pytestmark = [
    pytest.mark.podresources,
    pytest.mark.standard,
    pytest.mark.kep(3695),
    pytest.mark.requires("node_access", "gate.KubeletPodResourcesDynamicResources"),
]


def _running_with_claim(k8s, tracker, builder):
    """A running pod whose container "user" references a claim and whose container "other" does not."""
    claim = tracker.create(builder.claim())
    pod = tracker.create(builder.pod(containers=[container("user", uses=[claim]), container("other")]))
    return waits.pod_running(k8s, pod, timeout=timeouts.POD_START), claim


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-01", "PRA-04")
@pytest.mark.requires("driver.cdi", "driver.container_isolation")
def test_list_reports_the_claim_for_the_referencing_container_only(k8s, tracker, builder, node_access, probe):
    """List shows the claim (name, namespace, driver/pool/device of the allocation) for the container that
    references it and nothing for its sibling.
    Source: PodResources v1 ContainerResources.dynamic_resources (KEP-3695)."""
    # given: a running pod with a claim used by one of two containers
    pod, claim = _running_with_claim(k8s, tracker, builder)
    claim = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    # when: the node's kubelet lists pod resources
    client = node_access.pod_resources(pod.spec.node_name)
    per_container = client.dynamic_resources(pod.name, pod.namespace)
    # then: "user" has exactly this claim with the allocated devices; "other" has none
    user = per_container.get("user", [])
    assert [(d.get("claimName"), d.get("claimNamespace")) for d in user] == [(claim.name, claim.namespace)], user
    assert reported_devices(user) == allocated_devices(claim), (user, claim.describe())
    assert per_container.get("other") == [], per_container
    user, other = probe.shows_claimed_devices(pod, "user"), probe.shows_no_device(pod, "other")
    assert user and other, f"{user.evidence}\n{other.evidence}"


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-02")
@pytest.mark.requires("gate.KubeletPodResourcesGet")
def test_get_reports_the_same_as_list(k8s, tracker, builder, node_access):
    """Get(pod) returns the same DRA entries as List for that pod.
    Source: PodResources v1 Get (KubeletPodResourcesGet)."""
    # given: a running pod with a claim
    pod, _ = _running_with_claim(k8s, tracker, builder)
    client = node_access.pod_resources(pod.spec.node_name)
    # when: it is read with Get and with List
    got, listed = client.get(pod.name, pod.namespace), client.entry(pod.name, pod.namespace)
    # then: the per-container DRA entries agree
    assert claims_by_container(got) == claims_by_container(listed), (got, listed)
    assert claims_by_container(got)["user"], got


@pytest.mark.scenario("PRA-02")
@pytest.mark.requires("gate.KubeletPodResourcesGet")
def test_get_for_an_unknown_pod_fails_with_not_found(builder, inventory, node_access):
    """Get for a pod the kubelet does not run fails and the message says the pod was not found.
    Source: kubelet podresources server_v1.go Get ("pod ... not found")."""
    # given: a pod that was built but never created
    pod = builder.pod()
    # when: the kubelet is asked for it
    with pytest.raises(PodResourcesError) as error:
        node_access.pod_resources(inventory.nodes()[0]).get(pod.name, pod.namespace)
    # then: not found
    assert "not found" in error.value.details(), error.value


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-04")
@pytest.mark.requires("driver.cdi")
def test_reported_cdi_ids_are_defined_by_the_driver(k8s, tracker, builder, node_access):
    """The CDI device IDs PodResources reports for the claim are defined by that claim's own CDI spec on the
    node (what the driver prepared for it), or by a driver-wide spec, never by another claim's spec.
    Source: PodResources v1 ClaimResource.cdi_devices; CDI spec ``<kind>=<name>`` (dra-protocols.md §4)."""
    # given: a running pod with a claim
    pod, claim = _running_with_claim(k8s, tracker, builder)
    node = pod.spec.node_name
    # when: PodResources (the claim's entry) and the claim's own CDI spec files are read
    entries = node_access.pod_resources(node).dynamic_resources(pod.name, pod.namespace)["user"]
    reported = reported_cdi_ids(for_claim(entries, claim))
    # then: the reported IDs are non-empty and the claim's own (driver-wide ones allowed besides)
    assert reported, f"no CDI device reported for claim {claim.name}: {entries}"
    own, evidence = cdi.ids_belong_to(node_access, node, claim, reported)
    assert own, evidence


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-01")
def test_template_claim_is_reported_under_its_generated_name(k8s, tracker, builder, node_access):
    """For a template claim, PodResources reports the generated ResourceClaim name, not the template's.
    Source: dra-protocols.md §3.4 (claim_name is the real ResourceClaim name)."""
    # given: a running pod with a template claim
    pod = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=tracker.create(builder.claim_template()))), timeout=timeouts.POD_START
    )
    # when: the kubelet lists it
    entries = node_access.pod_resources(pod.spec.node_name).dynamic_resources(pod.name, pod.namespace)
    # then: the claim name is the generated claim's
    assert [d.get("claimName") for d in entries["ctr"]] == [c.name for c in waits.pod_claims(k8s, pod)], entries


@pytest.mark.shard_devices()
@pytest.mark.long_window  # the consistently-pending window: under xdist it starts early among the sharded tests
@pytest.mark.scenario("PRA-01")
def test_report_stays_stable_while_the_pod_runs(k8s, tracker, builder, node_access):
    """Repeated List calls report the same DRA entries for a running pod (no growth, no loss).
    Source: PodResources v1 List; dra-protocols.md §3.4 (CDI names accumulated per driver)."""
    # given: a running pod with a claim
    pod, _ = _running_with_claim(k8s, tracker, builder)
    client = node_access.pod_resources(pod.spec.node_name)
    # when: List is called repeatedly for the consistently-pending window
    stable = waits.stays_equal(
        lambda: client.dynamic_resources(pod.name, pod.namespace), duration=timeouts.CONSISTENTLY_PENDING
    )
    # then: the answer never changed and holds the claim
    assert stable["user"], stable


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-03")
def test_deleted_pod_disappears_from_list(k8s, tracker, builder, node_access):
    """After the pod is deleted, List no longer reports it.
    Source: KubeletPodResourcesListUseActivePods (List reports active pods only)."""
    # given: a running pod with a claim
    pod, _ = _running_with_claim(k8s, tracker, builder)
    client = node_access.pod_resources(pod.spec.node_name)
    assert client.entry(pod.name, pod.namespace), "the running pod is not listed"
    # when: it is deleted
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # then: List does not report it
    assert client.entry(pod.name, pod.namespace) == {}


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-01")
def test_allocatable_resources_are_unaffected_by_dra_claims(k8s, tracker, builder, inventory, node_access):
    """GetAllocatableResources reports no DRA device and does not change while a pod holds a claim.
    Source: dra-protocols.md §3.4 (GetAllocatableResources covers device plugins, CPUs, memory only)."""
    # given: the node's allocatable resources before any claim
    node = inventory.nodes()[0]
    before = node_access.pod_resources(node).allocatable()
    # when: a pod with a claim runs on that node
    waits.pod_running(
        k8s,
        tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node)),
        timeout=timeouts.POD_START,
    )
    # then: the answer is unchanged and names none of the driver's devices
    after = node_access.pod_resources(node).allocatable()
    assert after == before, (before, after)
    assert not set(inventory.names_on(node)) & allocatable_device_ids(after), after
