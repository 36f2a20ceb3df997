"""A kubelet plugin restart while a claim is prepared: the restarted driver still knows the claim it prepared
(unprepare works from the driver's own persisted state, the API object may be gone) and the node keeps
working.

Sources: upstream test/e2e_node/dra_test.go "must be functional after service reconnect" (feature catalog
RST-07); dra-protocols.md §2.4 and the driver contract "NodeUnprepareResources: rely only on persisted state,
delete the CDI specs"; dra-example-driver checkpoint.
"""

import pytest

from conformance.api import cdi, driver_slices, kubelet_uses, remove_driver_slice, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-07")]


@pytest.mark.requires("driver.cdi", "node_access", "plugin_restart")
def test_claim_prepared_before_a_plugin_restart_is_unprepared_after_it(
    k8s, tracker, builder, driver, node_access, dra_plugin
):
    """A claim prepared for a running pod before the node's plugin restarts is unprepared (its CDI spec
    removed) when the pod is deleted after the restart, and a new pod with a new claim runs on that node."""
    # given: a running pod whose claim the driver prepared on its node
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the driver's plugin on that node restarts, registers and serves again (at the endpoint it advertises
    # now: a plugin named per instance, kubeletplugin RollingUpdate, listens on a new socket), then the pod goes
    driver.restart_plugin(node)
    registered = waits.poll(
        lambda: kubelet_uses(k8s, node_access, node, driver.name)[0], timeout=timeouts.PLUGIN_REGISTRATION, interval=1.0
    )
    assert registered, kubelet_uses(k8s, node_access, node, driver.name)[1]
    assert dra_plugin(node).serving(), f"the restarted plugin of {node} does not answer at its advertised endpoint"
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # then: the claim's CDI spec is removed from the node
    unprepared = waits.poll(
        lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1.0
    )
    assert unprepared, cdi.left_behind(node_access, node, claim)
    # and: a new pod with a new claim runs on that node, its claim prepared there
    fresh = tracker.create(builder.claim())
    waits.pod_running(k8s, tracker.create(builder.pod(uses=fresh, node_name=node)), timeout=timeouts.POD_START)
    assert cdi.claim_specs(node_access, node, fresh), node_access.cdi_specs(node)


@pytest.mark.requires("driver.cdi", "node_access", "plugin_restart", "driver_slices_writable")
@pytest.mark.xdist_group("dra-cluster-state")  # deletes the node's slices
def test_plugin_restart_keeps_slices_and_running_pods_and_reregisters(
    k8s, tracker, builder, driver, node_access, probe
):
    """After the node's plugin restarts it registers with the kubelet again and publishes anew: its node's
    slices, deleted after the restart, come back with the same devices, and again when deleted once more (slices
    the old process left or its start-up publication do not pass alone; issue 24 §3), the running pod keeps its
    containers and its claim's CDI spec, and a new pod with a new claim runs there and shows its devices. The old
    pod's device is not probed again: its probe output was written before the restart and the harness cannot run
    a new probe in a running container."""
    # given: a running pod whose claim is prepared on its node, and the driver's pools there
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    before = waits.node_slices(k8s, driver.name, node)
    # when: the driver's plugin on that node restarts
    driver.restart_plugin(node)
    # then: it registers with the node's kubelet again and its pools keep the same devices
    registered = waits.poll(
        lambda: kubelet_uses(k8s, node_access, node, driver.name)[0], timeout=timeouts.PLUGIN_REGISTRATION, interval=1.0
    )
    assert registered, kubelet_uses(k8s, node_access, node, driver.name)[1]
    for old in [s for s in driver_slices(k8s, driver.name) if s.get("spec.nodeName") == node]:
        remove_driver_slice(k8s, driver.name, old)
    after = waits.node_republished(k8s, driver.name, before, replaced=True, timeout=timeouts.SLICES_PUBLISHED)
    # and: deleted once more, they come back again: the first deletion may precede the restarted plugin's
    # start-up publication, which alone would re-create them; by now that publication has happened, so only a
    # driver that watches its slices passes (fault no-republish)
    for old in [s for s in driver_slices(k8s, driver.name) if s.get("spec.nodeName") == node]:
        remove_driver_slice(k8s, driver.name, old)
    waits.node_republished(k8s, driver.name, after, replaced=True, timeout=timeouts.SLICES_PUBLISHED)
    # and: the running pod keeps its containers and its claim stays prepared
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), ctrs
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # and: a new pod with a new claim runs on that node and shows its devices
    fresh = waits.pod_running(
        k8s,
        tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node)),
        timeout=timeouts.POD_START,
    )
    shown = probe.shows_claimed_devices(fresh)
    assert shown, shown.evidence
    # and: once the restarted plugin has served that pod, its pools still hold the same devices
    waits.node_republished(k8s, driver.name, before, timeout=timeouts.SLICES_PUBLISHED)
