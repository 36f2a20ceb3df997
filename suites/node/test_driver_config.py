"""Opaque driver configuration from the DeviceClass reaches the container of a claim of that class.

Sources: resource.k8s.io/v1 DeviceClassSpec.config and DeviceAllocationConfiguration.source (FromClass);
upstream test/e2e/dra/dra.go "supports claim and class parameters"; KEP-4381 (configuration of the class
applies to every claim that uses it, before the claim's own).
"""

import pytest

from conformance.api import opaque_config, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.opaque_config")
def test_class_config_reaches_the_container(k8s, tracker, builder, profile, inventory, probe):
    """A DeviceClass carrying the profile's opaque config: a pod with a claim of that class (and no config of
    its own) sees its allocated device and shows the config.
    Source: resource.k8s.io/v1 DeviceClassSpec.config; upstream "supports claim and class parameters"."""
    # given: a DeviceClass of the driver with the opaque config, and a claim of it without config
    device_class = tracker.create(builder.device_class(config=[opaque_config(profile.opaque_parameters)]))
    claim = tracker.create(builder.claim(device_class=device_class.name))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the allocation carries the class config, and the container sees its device and the config
    claim = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    sources = [c.get("source") for c in claim.get("status.allocation.devices.config") or []]
    assert sources == ["FromClass"], claim.describe()
    shown, evidence = probe.shows_allocation(pod, claim, inventory)
    assert shown, evidence
    assert probe.shows_config(pod), "class config missing in the container: " + probe.evidence(pod)
