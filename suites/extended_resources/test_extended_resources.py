"""Extended resources backed by DRA (KEP-5004, gate DRAExtendedResource): a container that asks in
``resources.limits`` for the extended resource of a DeviceClass (``spec.extendedResourceName``) gets a ResourceClaim
the scheduler generates for the pod; the driver prepares it like any claim, and the claim goes away with the pod.

What checks the driver: the container sees exactly the generated claim's devices (fault ``wrong-cdi-device``);
the driver's own DeviceClass maps the profile's ``extended_resource_name`` (fault
``class-without-extended-resource``); the other tests use a DeviceClass they create.
What checks the platform only (scheduler, kube-controller-manager, garbage collector): the generated claim's
annotation, owner, request mappings and its deletion with the pod or after the pod completed.

Sources: KEP-5004 "DRA: Extended Resource"; core/v1 PodStatus.extendedResourceClaimStatus; resource.k8s.io/v1
DeviceClassSpec.extendedResourceName; upstream test/e2e/dra "must run a pod with extended resource ...",
"must accurately populate ExtendedResourceClaimStatus", "must cleanup extended resource claims when pods
complete" (feature-catalog.md §5.L ER-01, ER-03, ER-04, ER-08).
"""

import pytest

from conformance.api import extended_claim, extended_claim_problems, timeouts, waits

pytestmark = [
    pytest.mark.extended_resources,
    pytest.mark.full,
    pytest.mark.kep(5004),
    pytest.mark.requires("gate.DRAExtendedResource"),
]


@pytest.mark.scenario("ER-01", "ER-08")
def test_container_limits_for_a_class_extended_resource_get_a_generated_claim(k8s, tracker, builder, probe, inventory):
    """A container asking for one of a DeviceClass's extended resource runs with a claim generated for its pod:
    annotated, controlled by the pod, mapped to the container's request, reserved for the pod; the container
    sees exactly that claim's device. Source: KEP-5004; upstream "must accurately populate
    ExtendedResourceClaimStatus"."""
    # given: a DeviceClass of the driver's devices mapping an extended resource
    resource = tracker.create(builder.extended_resource_class()).get("spec.extendedResourceName")
    # when: a pod's container asks for one in its limits
    pod = tracker.create(builder.pod(extended_resources={resource: "1"}))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: the pod names its generated claim, allocated and mapped to the container, whose device it sees
    claim = waits.claim_allocated(k8s, extended_claim(pod), timeout=timeouts.ALLOCATION)
    problems = extended_claim_problems(pod, claim, "ctr", [resource])
    assert len(claim.results) == 1 and not problems, "\n".join(problems) + "\n" + claim.describe()
    shown = probe.shows_allocation(pod, claim, inventory)
    assert shown, shown.evidence


@pytest.mark.scenario("ER-03")
@pytest.mark.requires("driver.multiple_devices")
def test_container_asking_for_two_sees_exactly_the_two_generated_devices(k8s, tracker, builder, probe, inventory):
    """A container asking for two of a class's extended resource gets a generated claim with two devices and sees
    exactly those two. Source: KEP-5004 (the request count is the extended resource quantity); upstream
    "must run a pod with extended resource with one container one resource"."""
    # given: a DeviceClass mapping an extended resource
    resource = tracker.create(builder.extended_resource_class()).get("spec.extendedResourceName")
    # when: a pod's container asks for two
    pod = tracker.create(builder.pod(extended_resources={resource: "2"}))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: the generated claim holds two devices and the container sees exactly those
    claim = waits.claim_allocated(k8s, extended_claim(pod), timeout=timeouts.ALLOCATION)
    assert len(claim.results) == 2, claim.describe()
    shown = probe.shows_allocation(pod, claim, inventory)
    assert shown, shown.evidence


@pytest.mark.scenario("ER-04")
def test_generated_claim_is_deleted_with_its_pod(k8s, tracker, builder):
    """Deleting a pod deletes the claim generated for its extended resources (the claim is controlled by the pod).
    Source: KEP-5004; metadata.ownerReferences garbage collection."""
    # given: a running pod asking for a class's extended resource, and its generated claim
    resource = tracker.create(builder.extended_resource_class()).get("spec.extendedResourceName")
    pod = tracker.create(builder.pod(extended_resources={resource: "1"}))
    claim = waits.claim_allocated(
        k8s, extended_claim(waits.pod_running(k8s, pod, timeout=timeouts.POD_START)), timeout=timeouts.ALLOCATION
    )
    # when: the pod is deleted
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # then: the generated claim is gone too
    waits.claim_gone(k8s, claim, timeout=timeouts.DEALLOCATION)


@pytest.mark.scenario("ER-04")
@pytest.mark.requires("platform.extended_claim_cleanup_on_completion")
def test_generated_claim_is_deleted_when_its_pod_completes(k8s, tracker, builder):
    """The claim generated for a pod's extended resource is deleted once the pod has completed.
    Source: KEP-5004; upstream "must cleanup extended resource claims when pods complete"."""
    # given: a DeviceClass mapping an extended resource
    resource = tracker.create(builder.extended_resource_class()).get("spec.extendedResourceName")
    # when: a pod asking for one runs its probe to completion
    command = builder.probe_pod_command(then_sleep=False)
    pod = tracker.create(builder.pod(extended_resources={resource: "1"}, command=command))
    pod = waits.pod_succeeded(k8s, pod, timeout=timeouts.POD_START)
    # then: its generated claim is gone
    waits.claim_gone(k8s, extended_claim(pod), timeout=timeouts.DEALLOCATION)


@pytest.mark.scenario("ER-01")
@pytest.mark.requires("driver.extended_resource_name")
def test_the_drivers_own_device_class_serves_the_profiles_extended_resource(
    k8s, tracker, builder, profile, probe, inventory
):
    """Exactly one DeviceClass the driver ships (profile device_classes) maps the profile's extended_resource_name,
    and a container asking for one of it runs on a device of the driver it sees: workloads written for the
    device plugin's resource name (e.g. nvidia.com/gpu) get a DRA device. Source: KEP-5004; resource.k8s.io/v1
    DeviceClassSpec.extendedResourceName ("should be unique among all the device classes")."""
    # given: the driver's own DeviceClasses, as deployed
    wanted = profile.extended_resource_name
    found = {c: k8s.get("DeviceClass", c).get("spec.extendedResourceName") for c in profile.device_classes}
    assert list(found.values()).count(wanted) == 1, f"want exactly one class mapping {wanted}; found {found}"
    # when: a pod's container asks for one of that extended resource in its limits
    pod = tracker.create(builder.pod(extended_resources={wanted: "1"}))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: its generated claim holds one device of the driver, mapped to the container, which sees that device
    claim = waits.claim_allocated(k8s, extended_claim(pod), timeout=timeouts.ALLOCATION)
    problems = extended_claim_problems(pod, claim, "ctr", [wanted])
    foreign = [f"{r.driver}/{r.pool}/{r.device}" for r in claim.results if r.driver != profile.driver]
    assert len(claim.results) == 1 and not problems and not foreign, f"{problems} {foreign}\n{claim.describe()}"
    shown = probe.shows_allocation(pod, claim, inventory)
    assert shown, shown.evidence
