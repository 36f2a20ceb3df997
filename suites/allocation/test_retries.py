"""The scheduler retries claims that could not be allocated once the cluster changes: a missing DeviceClass is
created, a class that matched nothing is fixed. These tests create and change DeviceClasses (cluster-scoped
state), so xdist runs them in the one cluster-state group.

Sources: upstream test/e2e/dra/dra.go "retries pod scheduling after creating device class", "retries pod
scheduling after updating device class"; resource.k8s.io/v1 DeviceClass.spec.selectors.
"""

import pytest

from conformance.api import NEVER_MATCHES, api_verbs, timeouts, waits

pytestmark = [
    pytest.mark.allocation,
    pytest.mark.standard,
    pytest.mark.kep(4381),
    pytest.mark.xdist_group("dra-cluster-state"),
]


@pytest.mark.scenario("ALLOC-10")
def test_pod_runs_after_its_missing_device_class_is_created(k8s, tracker, builder, probe):
    """A pod whose claim names a DeviceClass that does not exist yet is unschedulable with the scheduler's
    reason naming the class; it runs once the class is created.
    Source: upstream "retries pod scheduling after creating device class"; scheduler DynamicResources
    PreFilter ("device class <name> does not exist")."""
    # given: a pod whose claim uses a class not yet created
    device_class = builder.device_class()
    pod = tracker.create(builder.pod(uses=tracker.create(builder.claim(device_class=device_class.name))))
    waits.pod_unschedulable_with(
        k8s, pod, f"device class {device_class.name} does not exist", timeout=timeouts.ALLOCATION
    )
    # when: the class is created
    tracker.create(device_class)
    # then: the pod runs and sees its device
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-11")
def test_pod_runs_after_its_device_class_is_fixed(k8s, tracker, builder, probe):
    """A pod whose DeviceClass matches no device is unschedulable; it runs once the class's selectors are
    updated to match the driver's devices.
    Source: upstream "retries pod scheduling after updating device class"."""
    # given: a class matching nothing and a pod using it
    broken = tracker.create(builder.device_class(selectors=NEVER_MATCHES))
    pod = tracker.create(builder.pod(uses=tracker.create(builder.claim(device_class=broken.name))))
    waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    # when: the class is applied again without the impossible selector
    api_verbs.apply(k8s, builder.device_class(name=broken.name))
    # then: the pod runs and sees its device
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence
