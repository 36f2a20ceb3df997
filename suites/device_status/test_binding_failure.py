"""Binding failure conditions (KEP-5007, gate DRADeviceBindingConditions): when the driver cannot attach a device
it allocated with binding conditions, it sets one of the device's ``bindingFailureConditions`` True in the claim's
``status.devices``; the scheduler then gives the device up (the claim's allocation is released and
``status.devices`` cleared) instead of binding the pod to it.

Only drivers whose profile names a ``binding_failure_device`` (a device whose attach fails in that deployment) are
checked: the reference driver with ``--binding-failure-devices``
(fixtures/self-validation/reference-binding-failure.yaml).
Sources: resource.k8s.io/v1 Device.bindingFailureConditions, DeviceRequestAllocationResult.bindingFailureConditions;
KEP-5007 "DRA: Device Binding Conditions"; upstream test/integration/dra binding_conditions.go BasicFlow (a failure
condition clears status.devices and reallocates; feature-catalog.md §5.M BC-01/BC-02).
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [
    pytest.mark.device_status,
    pytest.mark.full,
    pytest.mark.kep(5007),
    pytest.mark.requires("gate.DRADeviceBindingConditions", "driver.binding_failure"),
]


@pytest.mark.scenario("BC-01", "BC-02")
def test_binding_failure_releases_the_allocation_and_the_pod_stays_unbound(
    k8s, tracker, builder, driver, binding_failure_selector
):
    """A pod whose claim can only get a device the driver fails to attach is never bound: the driver reports a
    bindingFailureCondition for that device, the scheduler releases the allocation, and the pod has no node.
    Source: KEP-5007 bindingFailureConditions; upstream integration "DeviceBindingConditions/BasicFlow"."""
    # given: a claim that only the device whose attach fails satisfies
    claim = tracker.create(builder.claim(selectors=binding_failure_selector))
    # when: a pod using it is scheduled
    pod = tracker.create(builder.pod(uses=claim))
    # then: the driver reported the failure, the scheduler released the device, and the pod was not bound
    failed = waits.claim_binding_failure_released(k8s, claim, driver.name, timeout=timeouts.ALLOCATION)
    assert failed, "no binding failure recorded"
    unbound = waits.pod_stays_pending(k8s, pod, duration=timeouts.CONSISTENTLY_PENDING)
    assert not unbound.get("spec.nodeName"), unbound.describe(True)
