"""The driver removed from every node while a pod uses one of its devices, then installed again: the
documented platform behaviour is that running pods keep running (the kubelet does not stop containers when a
plugin goes away), new pods that need the driver do not start until it is back, and after the reinstall the
driver prepares new claims and unprepares the claims it prepared before (from its own state: the claim
object may be gone).

Sources: KEP-4381 (plugin de-registration; unprepare relies on the driver's persisted state); upstream
test/e2e/dra "sequential update with pods replacing each other" and test/e2e_node "must be functional after
service reconnect" (feature catalog RST-07, RST-10).
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-10")]


@pytest.mark.requires("node_access", "driver_reinstall")
def test_driver_removed_while_a_pod_runs_then_reinstalled(k8s, tracker, builder, removable_driver, node_access, probe):
    """While the driver is removed the running pod keeps its containers and a new pod does not start; after
    the reinstall the new pod runs with its devices and the old pod's claim is unprepared when it is deleted."""
    # given: a running pod whose claim is prepared on its node
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    before = waits.node_slices(k8s, removable_driver.name, node)
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the driver is removed from every node
    removable_driver.remove_driver()
    # then: a new pod needing it on that node does not run, and the running pod keeps its containers
    waiting = tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node))
    waits.pod_stays_not_running(k8s, waiting, duration=timeouts.CONSISTENTLY_PENDING)
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), ctrs
    # when: the driver is installed again
    removable_driver.reinstall_driver()
    # then: its pools on the node are published with the same devices, and the waiting pod runs (its earlier
    # prepare errors, driver not registered, were expected) and shows its devices
    waits.node_republished(k8s, removable_driver.name, before, timeout=timeouts.REPUBLISH_AFTER_RESTART)
    running = waits.pod_running(k8s, waiting, timeout=timeouts.POD_START, allow_prepare_errors=True)
    shown = probe.shows_claimed_devices(running)
    assert shown, shown.evidence
    # and: the old claim's CDI spec survived the reinstall; deleting the old pod unprepares it (spec removed)
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    gone = waits.poll(
        lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1.0
    )
    assert gone, cdi.left_behind(node_access, node, claim)
