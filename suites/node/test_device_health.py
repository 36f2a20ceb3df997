"""Device health in pod status (KEP-4680, alpha gate ResourceHealthStatus): the driver streams the health of
its devices to the kubelet (DRAResourceHealth NodeWatchResources) and the kubelet shows it in the status of
every container using them. The service is optional for a DRA plugin: a profile declares it (``health: true``);
dra-example-driver v0.4.0 does not serve it.

Sources: KEP-4680 "Add Resource Health Status to the Pod Status"; core/v1
ContainerStatus.allocatedResourcesStatus; kubelet pkg/kubelet/cm/dra (healthinfo.go, manager.go
UpdateAllocatedResourcesStatus); upstream test/e2e_node/dra_test.go (ResourceHealthStatus).

The transition test needs the profile's runtime switch (``health_switch``, conformance/dra/health_switch.py)
to turn a device Unhealthy; without it the test skips as a coverage gap.
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [
    pytest.mark.node,
    pytest.mark.full,
    pytest.mark.kep(4680),
    pytest.mark.requires("gate.ResourceHealthStatus", "driver.health", "platform.health_of_named_claims"),
]


@pytest.mark.scenario("HLTH-01")
@pytest.mark.shard_devices()
def test_running_pod_reports_its_allocated_devices_healthy(k8s, tracker, builder):
    """A running pod's container lists one health entry per allocated device of its claim, each Healthy.
    Source: KEP-4680; upstream e2e_node "DRA ResourceHealthStatus" (health reaches the pod status)."""
    # given: a running pod; its claim entry has the claim's name (kubelets < 1.35: kubernetes#134875)
    claim = tracker.create(builder.claim())
    pod = tracker.create(builder.pod(uses=claim, claim_entries_named_as_objects=True))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    # when: the kubelet reports the health of the container's devices
    statuses = waits.device_health_reported(k8s, pod, timeout=timeouts.DEVICE_HEALTH)
    # then: one entry for the claim, one resource per allocated device, all Healthy
    health = {r.get("resourceID"): r.get("health") for s in statuses for r in s.get("resources") or []}
    assert [s.get("name") for s in statuses] == [f"claim:{claim.name}"], statuses
    assert len(health) == len(allocated.results), (health, allocated.describe())
    assert set(health.values()) == {"Healthy"}, f"devices not Healthy: {health}"


@pytest.mark.scenario("HLTH-02")
@pytest.mark.xdist_group("dra-cluster-state")  # a driver may taint an unhealthy device in its slices (KEP-5055)
def test_device_turning_unhealthy_shows_in_the_pod_status_then_recovers(
    k8s, tracker, builder, inventory, health_switch
):
    """A running pod's device that the driver turns Unhealthy (the profile's runtime switch) shows Unhealthy in
    the container's health entry of its claim, and Healthy again once the switch is off. Health is per device:
    on a node with two or more devices, a second pod's device on the same node stays Healthy meanwhile (a driver
    that reports every device of the node Unhealthy fails; with one device per node there is no other).
    Source: KEP-4680 (Healthy -> Unhealthy -> Healthy reaches the pod status; health per device); upstream
    e2e_node "DRA ResourceHealthStatus"; kubelet pkg/kubelet/cm/dra/manager.go UpdateAllocatedResourcesStatus;
    breaker s10 finding 8."""
    # given: a running pod whose claim's one device is reported Healthy (and a second pod on another device of
    # the same node, when it has one)
    claim = tracker.create(builder.claim())
    pod = tracker.create(builder.pod(uses=claim, claim_entries_named_as_objects=True))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    device = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION).results[0].device
    node = pod.spec.node_name
    neighbour = None
    if len(inventory.names_on(node)) > 1:
        other = tracker.create(builder.claim())
        neighbour = tracker.create(builder.pod(uses=other, node_name=node, claim_entries_named_as_objects=True))
        neighbour = waits.pod_running(k8s, neighbour, timeout=timeouts.POD_START)
        waits.device_health_is(k8s, neighbour, "Healthy", timeout=timeouts.DEVICE_HEALTH)
    waits.device_health_is(k8s, pod, "Healthy", timeout=timeouts.DEVICE_HEALTH)
    # when: the driver turns that device Unhealthy
    health_switch.turn_unhealthy(node, [device])
    # then: the claim's one resource shows Unhealthy, the neighbour's device stays Healthy, and the pod's is
    # Healthy again after the switch is off
    statuses = waits.device_health_is(k8s, pod, "Unhealthy", timeout=timeouts.DEVICE_HEALTH)
    assert [(s.get("name"), len(s.get("resources") or [])) for s in statuses] == [(f"claim:{claim.name}", 1)]
    if neighbour is not None:
        why = f" while only device {device} of node {node} was turned Unhealthy"
        waits.device_health_stays(k8s, neighbour, "Healthy", duration=timeouts.CONSISTENTLY_PENDING, why=why)
    health_switch.turn_healthy(node)
    waits.device_health_is(k8s, pod, "Healthy", timeout=timeouts.DEVICE_HEALTH)
