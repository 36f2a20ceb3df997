"""ResourceClaim device status (KEP-4817, gate DRAResourceClaimDeviceStatus): a driver that reports device status
writes one ``status.devices`` entry per device it prepared for the claim (driver, pool, device, well-formed
conditions), and none for devices the claim was not allocated.

Only drivers whose profile declares ``device_status`` are checked (the reference driver with
``--device-status``: fixtures/self-validation/reference-device-status.yaml).
Sources: resource.k8s.io/v1 ResourceClaimStatus.devices (AllocatedDeviceStatus); KEP-4817; upstream
test/e2e/dra "must be possible for the driver to update the ResourceClaim.Status.Devices once allocated"
(feature-catalog.md §5.N DS-01).
"""

import pytest

from conformance.api import device_status_problems, timeouts, waits

pytestmark = [
    pytest.mark.device_status,
    pytest.mark.full,
    pytest.mark.kep(4817),
    pytest.mark.requires("driver.device_status"),
]


@pytest.mark.scenario("DS-01")
def test_driver_writes_status_for_the_prepared_device(k8s, tracker, builder, driver):
    """Once its pod runs, the claim's status.devices has exactly one well-formed entry of the driver for its
    allocated device. Source: KEP-4817; upstream "must be possible for the driver to update the
    ResourceClaim.Status.Devices once allocated"."""
    # given: a claim for one device
    claim = tracker.create(builder.claim())
    # when: a pod using it runs (NodePrepareResources done)
    waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: status.devices names the allocated device, and only it
    current = waits.claim_device_status(k8s, claim, driver.name, timeout=timeouts.DEVICE_STATUS)
    problems = device_status_problems(current, driver.name)
    assert not problems, "\n".join(problems) + "\n" + current.describe(status_only=True)


@pytest.mark.scenario("DS-01")
@pytest.mark.requires("driver.multiple_devices")
def test_driver_writes_status_for_every_device_of_the_claim(k8s, tracker, builder, driver):
    """A claim for two devices gets one status.devices entry of the driver per allocated device, naming both.
    Source: KEP-4817 (one AllocatedDeviceStatus per allocated device the driver reports on)."""
    # given: a claim for two devices
    claim = tracker.create(builder.claim(count=2))
    # when: a pod using it runs
    waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: each of the two allocated devices has its entry, and no other device has one
    current = waits.claim_device_status(k8s, claim, driver.name, timeout=timeouts.DEVICE_STATUS)
    assert len(current.results) == 2, current.describe()
    problems = device_status_problems(current, driver.name)
    assert not problems, "\n".join(problems) + "\n" + current.describe(status_only=True)
