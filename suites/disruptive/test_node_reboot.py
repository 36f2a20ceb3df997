"""A node reboot (emulated on the local cluster: its processes stopped, its containers killed, its /run with
the runtime's CDI specs cleared, then containerd, kubelet and the driver's plugin started again): the
platform guarantees that a pod bound to the node with restartPolicy Always runs again, same pod, in new
containers, after the kubelet re-prepared its claim; the driver must make its devices work again (CDI specs
rewritten from its own checkpoint).

Sources: kubelet pod sync (a pod whose sandbox is gone gets a new sandbox and new containers) and
pkg/kubelet/cm/dra (checkpointed claims are prepared again after a restart); KEP-4381 (drivers keep their
state across restarts, CDI specs live under /var/run/cdi); kubernetes/kubernetes#141433 (a DRA pod stuck in
CreateContainerError after its node rebooted: the driver answered the kubelet's repeated prepare from its
checkpoint without rewriting the CDI spec), fixed in kubernetes-sigs/dra-example-driver#259.
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-07")]


@pytest.mark.requires("node_access", "node_reboot")
def test_pod_runs_again_with_its_devices_after_a_node_reboot(
    k8s, tracker, builder, cluster, driver, node_access, probe
):
    """After its node reboots, a running pod (restartPolicy Always) runs again in new containers that show
    its claim's devices, the claim's CDI spec is back on the node, the driver's pools there are republished and
    a new pod runs there."""
    # given: a running pod (restartPolicy Always) whose claim is prepared on its node
    claim = tracker.create(builder.claim())
    pod = tracker.create(builder.pod(uses=claim, restart_policy="Always"))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    before = waits.node_slices(k8s, driver.name, node)
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # when: the node reboots (its /run, with the CDI spec directory, is cleared) and is Ready again
    cleared = cluster.reboot_node(node)
    # then: the same pod runs again in new containers that show the claim's devices
    again = waits.pod_running_again(k8s, pod, ctrs, timeout=timeouts.POD_START)
    shown = probe.shows_claimed_devices(again)
    assert shown, f"{shown.evidence}; cleared by the reboot: {cleared}"
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    # and: the driver republishes the pools the restarted kubelet wiped, with the same devices
    waits.node_republished(k8s, driver.name, before, timeout=timeouts.REPUBLISH_AFTER_RESTART, replaced=True)
    # and: a new pod with a new claim runs on that node and shows its devices
    fresh = waits.pod_running(
        k8s,
        tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node)),
        timeout=timeouts.POD_START,
    )
    shown = probe.shows_claimed_devices(fresh)
    assert shown, shown.evidence
