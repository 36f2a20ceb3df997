"""adminAccess (KEP-5018): only namespaces labelled ``resource.kubernetes.io/admin-access: "true"`` may
request it; admin claims get devices already in use without taking them away; results are marked
adminAccess; the driver signals admin access to the container.

Sources: upstream test/e2e/dra/dra.go "control plane validate ResourceClaimTemplate and ResourceClaim for admin
access", "kubelet DaemonSet with admin access"; integration "AdminAccess"; resource.k8s.io/v1
ExactDeviceRequest.adminAccess, DeviceRequestAllocationResult.adminAccess.
"""

import pytest

from conformance.api import ApiError, api_verbs, entry_key, timeouts, waits

pytestmark = [
    pytest.mark.admin_access,
    pytest.mark.standard,
    pytest.mark.kep(5018),
    pytest.mark.requires("gate.DRAAdminAccess", "driver.admin_access"),
]

NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"


@pytest.mark.scenario("ADM-01")
@pytest.mark.parametrize("kind", ["claim", "claim_template"])
def test_admin_access_is_refused_without_the_namespace_label(tracker, builder, kind):
    """A ResourceClaim or ResourceClaimTemplate asking for adminAccess in a namespace without the label is
    refused, and the error names the label.
    Source: upstream "control plane validate ResourceClaimTemplate and ResourceClaim for admin access"."""
    # given: the test namespace, which lacks the admin-access label
    make = getattr(builder, kind)
    # when: an admin claim (or template) is created there
    error = api_verbs.refused(lambda: tracker.create(make(admin_access=True)))
    # then: it is refused naming the label
    assert isinstance(error, ApiError) and error.status in (403, 422), error
    assert NAMESPACE_LABEL in error.message, error


@pytest.mark.scenario("ADM-01")
@pytest.mark.shard_devices()
def test_admin_template_in_labelled_namespace_yields_admin_claim(k8s, tracker, admin_builder, probe):
    """In a labelled namespace an admin template is accepted and a pod using it runs with an admin claim.
    Source: upstream "control plane validate ... for admin access" (accepted after labelling)."""
    # given: an admin template in the labelled namespace
    template = tracker.create(admin_builder.claim_template(admin_access=True))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(admin_builder.pod(uses=template)), timeout=timeouts.POD_START)
    # then: its generated claim's results are marked adminAccess and the device is visible
    claim = waits.pod_claims(k8s, pod)[0]
    assert [r.admin_access for r in claim.results] == [True], claim.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ADM-02", "ADM-03")
@pytest.mark.xdist_group("dra-cluster-state")  # takes a whole node
def test_admin_claim_gets_devices_already_in_use(
    k8s, tracker, builder, admin_builder, inventory, probe, together_in_use
):
    """While a normal pod holds every device of a node (those that can be allocated together), an admin pod
    on that node gets the same devices; the normal claim keeps its allocation and its pod keeps running.
    Source: upstream "kubelet DaemonSet with admin access"; integration "AdminAccess"."""
    # given: a normal pod holding all devices of one node
    node = inventory.nodes()[0]
    user_claim = tracker.create(builder.claim(allocation_mode="All", selectors=together_in_use.selector))
    user = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=user_claim, node_name=node)), timeout=timeouts.POD_START
    )
    # when: an admin pod asks for all devices of the same node
    admin_claim = tracker.create(
        admin_builder.claim(allocation_mode="All", selectors=together_in_use.selector, admin_access=True)
    )
    admin = waits.pod_running(
        k8s, tracker.create(admin_builder.pod(uses=admin_claim, node_name=node)), timeout=timeouts.POD_START
    )
    # then: same devices, marked adminAccess; the user pod and its allocation are untouched
    admin_claim = waits.claim_allocated(k8s, admin_claim, timeout=timeouts.ALLOCATION, reserved_for=[admin])
    user_claim = waits.claim_allocated(k8s, user_claim, timeout=timeouts.ALLOCATION, reserved_for=[user])
    assert sorted(r.device for r in admin_claim.results) == sorted(r.device for r in user_claim.results)
    assert all(r.admin_access for r in admin_claim.results), admin_claim.describe()
    assert k8s.get("Pod", user.name, user.namespace).phase == "Running"
    shown, evidence = probe.shows_allocation(admin, admin_claim, inventory)
    assert shown, evidence


@pytest.mark.scenario("ADM-03")
@pytest.mark.requires("driver.admin_access_signal")
@pytest.mark.shard_devices()
def test_driver_signals_admin_access_to_the_container(k8s, tracker, builder, admin_builder, probe):
    """The container of an admin claim shows the driver's admin-access signal; a normal claim's does not.
    Source: dra-example-driver ``DRA_ADMIN_ACCESS`` CDI env (cmd/dra-example-kubeletplugin/cdi.go)."""
    # given: a normal pod and an admin pod
    normal = tracker.create(builder.pod(uses=tracker.create(builder.claim())))
    admin = tracker.create(admin_builder.pod(uses=tracker.create(admin_builder.claim(admin_access=True))))
    # when: both run
    waits.pod_running(k8s, normal, timeout=timeouts.POD_START)
    waits.pod_running(k8s, admin, timeout=timeouts.POD_START)
    # then: only the admin container shows the signal
    assert probe.shows_admin_access(admin), "no admin-access signal in the admin claim's container: " + probe.evidence(
        admin
    )
    assert not probe.shows_admin_access(normal), "admin-access signal in a normal claim's container: " + probe.evidence(
        normal
    )


@pytest.mark.scenario("ADM-03")
@pytest.mark.requires("driver.multiple_devices")
def test_admin_claim_devices_are_distinct_within_the_claim(k8s, tracker, admin_builder, inventory, probe):
    """An admin claim for two devices gets two distinct results (admin access lifts sharing between claims, not
    within one): two devices, or two shares (distinct shareID) of a device that allows multiple allocations.
    Source: resource.k8s.io/v1 ExactDeviceRequest.count with adminAccess (allocator); KEP-5075 shareID."""
    # given: an admin claim for two devices
    claim = tracker.create(admin_builder.claim(count=2, admin_access=True))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(admin_builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: two distinct devices, both visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert len({entry_key(r) for r in allocated.results}) == 2, allocated.describe()
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence
