"""Container mapping: a container sees exactly the claims and requests it references (the isolation rule).

Sources: ai-conformance KAR-0049 (PositiveAccessTest, NegativeIsolationTest, MultiContainerIsolationTest);
upstream "must map configs and devices to the right containers" (test/e2e/dra/dra.go); driver contract §6.5.
"""

import pytest

from conformance.api import container, opaque_config, request, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("SEC-02")
@pytest.mark.shard_devices()
def test_pod_without_claim_sees_no_device(k8s, tracker, builder, inventory, probe):
    """A pod without any ResourceClaim on a driver node sees no device.
    Source: ai-conformance KAR-0049 NegativeIsolationTest."""
    # given: a driver node
    node = inventory.nodes()[0]
    # when: a pod without claims runs the probe there
    pod = waits.pod_running(k8s, tracker.create(builder.pod(node_name=node)), timeout=timeouts.POD_START)
    # then: the probe ran to its end and shows no device
    shown, evidence = probe.shows_no_device(pod)
    assert shown, evidence


@pytest.mark.scenario("SEC-03", "PREP-02")
@pytest.mark.requires("driver.container_isolation")
@pytest.mark.shard_devices()
def test_container_not_referencing_the_claim_sees_no_device(k8s, tracker, builder, probe):
    """In one pod, the container that references the claim sees the device and its sibling does not.
    Source: ai-conformance KAR-0049 MultiContainerIsolationTest; resource.k8s.io/v1 container resources.claims."""
    # given: a claim
    claim = tracker.create(builder.claim())
    # when: a pod has one container using it and one that does not
    pod = tracker.create(builder.pod(containers=[container("user", uses=[claim]), container("other")]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: "user" sees exactly the claim's device, "other" sees none
    user, other = probe.shows_claimed_devices(pod, "user"), probe.shows_no_device(pod, "other")
    assert user, user.evidence
    assert other, other.evidence


@pytest.mark.scenario("PREP-02")
@pytest.mark.requires("driver.container_isolation", "driver.multiple_devices")
@pytest.mark.shard_devices(2)
def test_container_sees_only_the_request_it_references(k8s, tracker, builder, probe):
    """Two containers referencing different requests of one claim each see only their request's device.
    Source: upstream "must map configs and devices to the right containers"; PodResourceClaim request field."""
    # given: a claim with two requests of one device each
    claim = tracker.create(builder.claim(requests=[request("first"), request("second")]))
    # when: each container references one request
    pod = tracker.create(
        builder.pod(
            containers=[container("first", uses=[(claim, "first")]), container("second", uses=[(claim, "second")])]
        )
    )
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: each sees exactly the device allocated for its request
    first, second = probe.shows_claimed_devices(pod, "first"), probe.shows_claimed_devices(pod, "second")
    assert first, first.evidence
    assert second, second.evidence


@pytest.mark.scenario("PREP-02", "ALLOC-01")
@pytest.mark.requires("driver.multiple_devices", "driver.opaque_config")
@pytest.mark.shard_devices(2)
def test_request_scoped_config_reaches_only_that_request(k8s, tracker, builder, profile, probe):
    """An opaque config scoped to one request reaches the container of that request, not the other one.
    Source: resource.k8s.io/v1 DeviceClaimConfiguration.requests; upstream "must map configs and devices to
    the right containers"."""
    # given: a claim with two requests and the profile's opaque config scoped to the first
    claim = tracker.create(
        builder.claim(
            requests=[request("first"), request("second")],
            config=[opaque_config(profile.opaque_parameters, requests=["first"])],
        )
    )
    # when: each container references one request
    pod = tracker.create(
        builder.pod(
            containers=[container("first", uses=[(claim, "first")]), container("second", uses=[(claim, "second")])]
        )
    )
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: only the first container shows the config
    assert probe.shows_config(pod, "first"), "config missing in the container of its request: " + probe.evidence(
        pod, "first"
    )
    assert not probe.shows_config(pod, "second"), "config of another request in this container: " + probe.evidence(
        pod, "second"
    )


@pytest.mark.scenario("ALLOC-01")
@pytest.mark.requires("driver.multiple_devices", "driver.opaque_config")
@pytest.mark.shard_devices(2)
def test_claim_wide_config_reaches_every_request(k8s, tracker, builder, profile, probe):
    """An opaque config without a request list applies to every request of the claim.
    Source: resource.k8s.io/v1 DeviceClaimConfiguration (empty requests = all); upstream "supports claim and
    class parameters"."""
    # given: a claim with two requests and an unscoped opaque config
    claim = tracker.create(
        builder.claim(requests=[request("first"), request("second")], config=[opaque_config(profile.opaque_parameters)])
    )
    # when: each container references one request
    pod = tracker.create(
        builder.pod(
            containers=[container("first", uses=[(claim, "first")]), container("second", uses=[(claim, "second")])]
        )
    )
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: both containers show it
    for name in ("first", "second"):
        assert probe.shows_config(pod, name), "claim-wide config missing in a container: " + probe.evidence(pod, name)


@pytest.mark.scenario("SEC-04")
@pytest.mark.requires("driver.multiple_devices")
@pytest.mark.shard_devices(2)
def test_pods_on_one_node_do_not_see_each_others_devices(k8s, tracker, builder, probe):
    """Two pods with their own claims on the same node each see only their own device.
    Source: ai-conformance KAR-0049 test plan item 2 (pod A cannot reach pod B's device)."""
    # given: a running pod with its own claim
    first = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=tracker.create(builder.claim()))), timeout=timeouts.POD_START
    )
    # when: a second pod with another claim runs on the same node
    second = tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=first.spec.node_name))
    waits.pod_running(k8s, second, timeout=timeouts.POD_START)
    # then: each sees exactly its own claim's device
    for pod in (first, second):
        shown, evidence = probe.shows_claimed_devices(pod)
        assert shown, evidence
