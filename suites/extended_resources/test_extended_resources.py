"""Extended resources backed by DRA (KEP-5004, gate DRAExtendedResource): a container that asks in
``resources.limits`` for the extended resource of a DeviceClass (its ``spec.extendedResourceName``, or the implicit
``deviceclass.resource.kubernetes.io/<class>``) gets a ResourceClaim the scheduler generates for the pod; the
driver prepares it like any claim, and the claim goes away with the pod.

What checks the driver: the container sees exactly the generated claim's devices (fault ``wrong-cdi-device``).
What checks the platform only (scheduler, kube-controller-manager): the generated claim's annotation, owner,
request mappings and its deletion after the pod completes.

Sources: KEP-5004 "DRA: Extended Resource"; core/v1 PodStatus.extendedResourceClaimStatus; resource.k8s.io/v1
DeviceClassSpec.extendedResourceName; upstream test/e2e/dra "must run a pod with extended resource ...",
"must accurately populate ExtendedResourceClaimStatus", "must cleanup extended resource claims when pods
complete" (feature-catalog.md §5.L ER-01, ER-03, ER-04, ER-08).
"""

import pytest

from conformance.api import IMPLICIT_PREFIX, extended_claim, extended_claim_problems, timeouts, waits

pytestmark = [
    pytest.mark.extended_resources,
    pytest.mark.full,
    pytest.mark.kep(5004),
    pytest.mark.requires("gate.DRAExtendedResource"),
]


@pytest.mark.scenario("ER-01", "ER-08")
def test_container_limits_for_a_class_extended_resource_get_a_generated_claim(k8s, tracker, builder, probe):
    """A container asking for one of a DeviceClass's extended resource runs with a claim generated for its pod:
    annotated, controlled by the pod, mapped to the container's request, reserved for the pod; the container
    sees exactly that claim's device. Source: KEP-5004; upstream "must accurately populate
    ExtendedResourceClaimStatus"."""
    # given: a DeviceClass of the driver's devices mapping an extended resource
    resource = tracker.create(builder.extended_resource_class()).get("spec.extendedResourceName")
    # when: a pod's container asks for one in its limits
    pod = waits.pod_running(
        k8s, tracker.create(builder.pod(extended_resources={resource: "1"})), timeout=timeouts.POD_START
    )
    # then: the pod names its generated claim, which is allocated and mapped to the container
    claim = waits.claim_allocated(k8s, extended_claim(pod), timeout=timeouts.ALLOCATION)
    assert len(claim.results) == 1, claim.describe()
    problems = extended_claim_problems(pod, claim, "ctr", [resource])
    assert not problems, "\n".join(problems) + "\n" + claim.describe() + pod.describe(status_only=True)
    shown = probe.shows_claimed_devices(pod)
    assert shown, shown.evidence


@pytest.mark.scenario("ER-01", "ER-03")
@pytest.mark.requires("driver.multiple_devices")
def test_implicit_class_resource_for_two_devices_shows_both(k8s, tracker, builder, profile, probe):
    """The implicit extended resource ``deviceclass.resource.kubernetes.io/<class>`` of the driver's own
    DeviceClass, asked for twice, gives the container exactly the two devices of its generated claim.
    Source: KEP-5004 (implicit extended resource name); upstream "… with one container one resource"."""
    # given: the implicit extended resource of the driver's DeviceClass
    resource = IMPLICIT_PREFIX + profile.device_class
    # when: a pod's container asks for two
    pod = waits.pod_running(
        k8s, tracker.create(builder.pod(extended_resources={resource: "2"})), timeout=timeouts.POD_START
    )
    # then: the generated claim holds two devices and the container sees exactly those
    claim = waits.claim_allocated(k8s, extended_claim(pod), timeout=timeouts.ALLOCATION)
    assert len(claim.results) == 2, claim.describe()
    problems = extended_claim_problems(pod, claim, "ctr", [resource])
    assert not problems, "\n".join(problems) + "\n" + claim.describe()
    shown = probe.shows_claimed_devices(pod)
    assert shown, shown.evidence


@pytest.mark.scenario("ER-04")
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
    claim = extended_claim(pod)
    waits.claim_gone(k8s, claim, timeout=timeouts.DEALLOCATION)
