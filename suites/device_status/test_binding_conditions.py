"""Binding conditions (KEP-5007, gate DRADeviceBindingConditions): a device published with ``bindingConditions``
is allocated with those conditions copied into the allocation result, and the scheduler binds the pod only once
the driver has set every one of them True in the claim's ``status.devices`` (none of the
``bindingFailureConditions`` True).

Only drivers whose profile declares ``binding_conditions`` are checked (the reference driver with
``--binding-conditions``: fixtures/self-validation/reference-binding-conditions.yaml).
Sources: resource.k8s.io/v1 Device.bindingConditions / bindingFailureConditions,
DeviceRequestAllocationResult.bindingConditions; KEP-5007 "DRA: Device Binding Conditions"; upstream
test/integration/dra binding_conditions.go BasicFlow (feature-catalog.md §5.M BC-01).
"""

import pytest

from conformance.api import binding_problems, timeouts, waits

pytestmark = [
    pytest.mark.device_status,
    pytest.mark.full,
    pytest.mark.kep(5007),
    pytest.mark.requires("gate.DRADeviceBindingConditions", "driver.binding_conditions"),
]


@pytest.mark.scenario("BC-01")
def test_pod_binds_after_the_driver_reports_the_binding_conditions(k8s, tracker, builder, driver, binding_selector):
    """A pod whose claim got a device with binding conditions runs; its claim carries the conditions in the
    allocation result, the driver set them True in status.devices, and the pod was scheduled no earlier.
    Source: KEP-5007; upstream integration "DeviceBindingConditions/BasicFlow"."""
    # given: a claim pinned to one device the driver publishes with bindingConditions
    claim = tracker.create(builder.claim(selectors=binding_selector))
    # when: a pod using it is scheduled
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the binding conditions were copied, reported True by the driver, and preceded the binding
    current = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    problems = binding_problems(current, pod, driver.name)
    assert not problems, "\n".join(problems) + "\n" + current.describe(status_only=True) + pod.describe(True)
