"""Smoke suite: the harness end to end (driver publishes, a claim is allocated and prepared, the container
sees the device, teardown releases it). The real suites live next to this one."""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.scenario("KEP5970-2", "KEP5970-3", "KEP5970-5"), pytest.mark.kep(5970)]


@pytest.mark.core
@pytest.mark.publishing
def test_driver_publishes_devices_on_every_node(k8s, driver, profile, driver_nodes):
    """Every node the driver's deployment asks for (and no other) has ResourceSlices with at least
    ``devices_per_node`` devices.
    Source: KEP-5970 behaviour 2 (ResourceSlice publishing); issue 24 §2 (expected driver nodes)."""
    # given: the nodes the driver's deployment asks for
    nodes = list(driver_nodes.names)
    # when: its slices are listed
    slices = waits.slices_published(
        k8s, driver.name, min_devices=profile.devices_per_node, timeout=timeouts.SLICES_PUBLISHED
    )
    # then: each complete pool carries the driver name and devices, on exactly those nodes
    assert all(s.get("spec.driver") == driver.name for s in slices), [s.describe() for s in slices]
    missing = driver_nodes.mismatch(waits.devices_by_node(slices), "devices")
    assert nodes and missing is None, missing or f"no expected driver nodes ({driver_nodes.source})"
    assert waits.device_count(slices) >= profile.devices_per_node, (
        f"the profile declares devices_per_node {profile.devices_per_node}; the driver's slices: "
        f"{[s.describe() for s in slices]}"
    )


@pytest.mark.core
@pytest.mark.allocation
@pytest.mark.shard_devices()
def test_pod_with_claim_runs_and_sees_its_device(k8s, tracker, builder, probe):
    """A pod using a ResourceClaim for one device runs, its claim is allocated and reserved for it, and the
    container sees the device. Source: KEP-5970 behaviours 3-5; upstream "supports simple pod referencing
    inline resource claim"."""
    # given: a claim for one device of the driver's class
    claim = tracker.create(builder.claim())
    # when: a pod uses it
    pod = tracker.create(builder.pod(uses=claim))
    # then: it runs, the claim is allocated to it, and the probe shows exactly the allocated device
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    assert len(allocated.results) == 1, allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence
