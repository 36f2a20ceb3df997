"""A rolling update with surge of the driver's plugin DaemonSets while a pod uses one of its devices: on each
node the new plugin pod starts beside the old one and registers while the old one still serves; the old one
goes once the new one is Ready. Two instances of one driver run on a node at once, so each must listen on a
socket of its own. The running pod keeps its device, a new claim is prepared by the new instance, the claim
the old instance prepared is unprepared by the new one (device free again), and the new instance publishes
the node's slices anew.

Sources: kubelet pluginwatcher README "Seamless Upgrade" (maxSurge > 0; a unique socket file per instance);
k8s.io/dynamic-resource-allocation kubeletplugin ``RollingUpdate(uid)`` option; KEP-4381 (kubelet 1.33+:
several registrations of one DRA driver; unprepare relies on the driver's persisted state); apps/v1 DaemonSet
``updateStrategy.rollingUpdate.maxSurge``; issue 24 §3.
"""

import pytest

from conformance.api import cdi, driver_slices, remove_driver_slice, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-10")]


@pytest.mark.requires("driver.cdi", "node_access", "driver_surge_update", "driver_slices_writable")
def test_pod_keeps_its_device_through_a_rolling_update_with_surge(
    k8s, tracker, builder, surging_driver, inventory, node_access, probe
):
    """After the surge update the old pod runs on in the same containers; a new claim's pod on that node runs
    with its devices; deleting the old pod unprepares its claim (CDI spec removed) and its device runs a pinned
    claim's pod; the node's slices, deleted, come back with the same devices (a new publish)."""
    # given: a running pod whose claim is prepared on its node, and the driver's slices there
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    before = waits.node_slices(k8s, surging_driver.name, node)
    # when: the plugin DaemonSets roll with maxSurge 1 / maxUnavailable 0 (a new plugin pod on the pod's node)
    surging_driver.surge_update(node)
    # then: the pod keeps its containers, and a new claim's pod on that node runs with its devices
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), ctrs
    fresh = tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node))
    shown = probe.shows_claimed_devices(waits.pod_running(k8s, fresh, timeout=timeouts.POD_START))
    assert shown, shown.evidence
    # and: the old pod deleted, its claim is unprepared by the new instance and its device runs a new claim
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    gone = waits.poll(lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1)
    assert gone, cdi.left_behind(node_access, node, claim)
    same_device = inventory.selector_for(inventory.of(allocated.results[0]), on_node=True)
    again = tracker.create(builder.claim(selectors=same_device))
    waits.pod_running(k8s, tracker.create(builder.pod(uses=again, node_name=node)), timeout=timeouts.POD_START)
    # and: the new instance publishes: the node's slices, deleted, come back with the same devices
    for old in [s for s in driver_slices(k8s, surging_driver.name) if s.get("spec.nodeName") == node]:
        remove_driver_slice(k8s, surging_driver.name, old)
    waits.node_republished(k8s, surging_driver.name, before, replaced=True, timeout=timeouts.SLICES_PUBLISHED)
