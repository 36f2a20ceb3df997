"""Opaque driver configuration from the DeviceClass reaches the container of a claim of that class.

Sources: resource.k8s.io/v1 DeviceClassSpec.config and DeviceAllocationConfiguration.source (FromClass);
upstream test/e2e/dra/dra.go "supports claim and class parameters"; KEP-4381 (configuration of the class
applies to every claim that uses it, before the claim's own). A claim's config applies to that claim only: a
later claim of the same device without config shows none of it (KEP-4381; breaker s14 B9).
"""

import pytest

from conformance.api import invalid_opaque_parameters, opaque_config, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.shard_devices()
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


@pytest.mark.shard_devices()
@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.opaque_config")
def test_claim_config_overrides_class_config(k8s, tracker, builder, profile, probe):
    """A DeviceClass config and a claim config setting the same thing: the class config applies first, the
    claim's wins, so the container shows the claim's value (profile ``opaque_config.override``) and not the
    class's. Source: upstream "supports claim and class parameters"; resource.k8s.io/v1
    DeviceAllocationConfiguration.source (FromClass before FromClaim); KEP-4381."""
    if not profile.opaque_override:
        pytest.skip(f"profile {profile.name} gives no opaque_config.override sample: precedence not observable")
    # given: a class carrying the profile's config and a claim of it carrying the override
    device_class = tracker.create(builder.device_class(config=[opaque_config(profile.opaque_parameters)]))
    config = [opaque_config(profile.opaque_override)]
    claim = tracker.create(builder.claim(device_class=device_class.name, config=config))
    # when: a pod uses the claim
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the claim's config won
    assert probe.shows_config(pod, override=True), f"claim config did not win: {probe.evidence(pod)}"
    assert not probe.shows_config(pod), f"class config applied after claim config: {probe.evidence(pod)}"


@pytest.mark.shard_devices(2)
@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.opaque_config")
def test_invalid_opaque_config_fails_prepare_for_that_claim(k8s, tracker, builder, profile, inventory, probe):
    """A claim carrying the driver's config with a kind no config API defines (an object, not a name):
    NodePrepareResources fails for that claim (a FailedPrepareDynamicResources event naming it; the pod never
    runs), and the driver keeps serving (a pod with a valid claim then runs on the same node): never a crash
    or a hang.
    Source: KEP-4381 (the driver validates opaque config at prepare time, errors per claim); upstream
    test-driver kubeletplugin.go; dra-protocols.md §2.3."""
    # given: a claim with an invalid config for the driver
    invalid = [opaque_config(invalid_opaque_parameters(profile.opaque_parameters))]
    node = inventory.nodes()[0]
    claim = tracker.create(builder.claim(config=invalid))
    # when: a pod on a driver node uses it
    pod = tracker.create(builder.pod(uses=claim, node_name=node))
    # then: prepare fails for that claim, and a valid claim still runs on that node
    event = waits.prepare_failed(k8s, pod, timeout=timeouts.KUBELET_RETRY)
    assert claim.name in (event.get("message") or ""), f"event does not name claim {claim.name}: {event.describe()}"
    other = tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node))
    waits.pod_running(k8s, other, timeout=timeouts.POD_START)


@pytest.mark.shard_devices()
@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.opaque_config")
def test_config_of_another_driver_is_ignored(k8s, tracker, builder, profile, inventory, probe):
    """A claim carrying, next to the profile's config, an opaque config for another driver (parameters this
    driver would refuse as its own): the driver ignores it, so the pod runs, sees its device and the config.
    Source: resource.k8s.io/v1 OpaqueDeviceConfiguration.driver (which kubelet plugin gets the parameters);
    KEP-4381; dra-example-driver cmd/dra-example-kubeletplugin/state.go GetOpaqueDeviceConfigs ("drivers must
    skip over other driver's configs")."""
    # given: a claim with the profile's config and a config for another driver
    foreign = opaque_config(invalid_opaque_parameters(profile.opaque_parameters), driver=builder.test_driver_name())
    claim = tracker.create(builder.claim(config=[opaque_config(profile.opaque_parameters), foreign]))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: it sees its device and the driver's own config
    shown, evidence = probe.shows_allocation(
        pod, waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION), inventory
    )
    assert shown, evidence
    assert probe.shows_config(pod), probe.evidence(pod)


@pytest.mark.shard_devices()
@pytest.mark.scenario("ALLOC-01")
def test_claim_with_only_another_drivers_config_runs(k8s, tracker, builder, inventory, probe):
    """A claim whose only opaque config is addressed to another driver (an object ``kind`` no config decoder
    accepts): every driver must skip configs not addressed to it, whether or not it has a config format of its
    own, so the pod runs and sees its device. No profile sample is needed (breaker finding 5: leaving
    ``opaque_config`` out of the profile must not dodge this).
    Source: resource.k8s.io/v1 OpaqueDeviceConfiguration.driver; KEP-4381; dra-example-driver
    cmd/dra-example-kubeletplugin/state.go GetOpaqueDeviceConfigs ("drivers must skip over other driver's
    configs")."""
    # given: a claim carrying only another driver's config
    foreign = invalid_opaque_parameters({"apiVersion": "config.other-driver.example/v1"})
    claim = tracker.create(builder.claim(config=[opaque_config(foreign, driver=builder.test_driver_name())]))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: it sees its allocated device
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence


@pytest.mark.shard_devices()
@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.opaque_config")
def test_config_of_an_earlier_claim_does_not_stick_to_the_device(k8s, tracker, builder, profile, inventory, probe):
    """A claim with the profile's opaque config runs a pod and is released (pod gone, claim deallocated); a claim
    without config pinned to the same device then runs a pod that sees the device and not the earlier config (a
    driver must reset a device's settings, e.g. a GPU sharing mode, between claims; breaker s14 B9).
    Source: KEP-4381 (a claim's config applies to that claim's devices only); resource.k8s.io/v1
    DeviceAllocationConfiguration (the configs of one allocation)."""
    # given: a claim with the config ran a pod on a device, and was released
    claim = tracker.create(builder.claim(config=[opaque_config(profile.opaque_parameters)]))
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, allocated = pod.spec.node_name, waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert probe.shows_config(pod), "claim config missing in the container: " + probe.evidence(pod)
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    # when: a claim without config, pinned to that device, runs a pod on that node
    same_device = inventory.selector_for(inventory.of(allocated.results[0]), on_node=True)
    again = tracker.create(builder.claim(selectors=same_device))
    later = waits.pod_running(k8s, tracker.create(builder.pod(uses=again, node_name=node)), timeout=timeouts.POD_START)
    # then: its container sees that device (the probe ran) and none of the earlier claim's config
    shown, evidence = probe.shows_allocation(
        later, waits.claim_allocated(k8s, again, timeout=timeouts.ALLOCATION), inventory
    )
    assert shown, evidence
    assert not probe.shows_config(later), f"the earlier claim's config stuck to the device: {probe.evidence(later)}"
