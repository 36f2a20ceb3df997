"""A kubelet restart while a claim is prepared: the kubelet's claim checkpoint keeps the claim prepared (the
pod keeps running in its containers, its CDI spec in place, its unprepare still happens after the pod is
deleted), the driver republishes the slices the kubelet wipes at start-up, and new pods work.

Sources: kubelet pkg/kubelet/cm/dra (claim info checkpoint ``dra_manager_state``; ResourceSlices of the
node wiped at start-up); upstream test/e2e_node/dra_test.go "must call NodeUnprepareResources for deleted pod
after Kubelet restart" and "ResourceSlice must be removed on kubelet startup" (feature catalog RST-03, RST-10,
PUB-03).
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-03")]


@pytest.mark.requires("node_access", "kubelet_restart")
def test_prepared_claim_survives_a_kubelet_restart(k8s, tracker, builder, driver, node_access, probe):
    """After the node's kubelet restarts, the running pod keeps its containers and its claim stays prepared
    (CDI spec), the driver's pools come back as new slices with the same devices, a new pod runs there, and
    deleting the old pod unprepares its claim (the kubelet knew it from its checkpoint). The old pod's device
    is not probed again: its probe output was written before the restart and the harness cannot run a new
    probe in a running container; the kept containers and CDI spec stand for it."""
    # given: a running pod whose claim is prepared on its node, and the driver's pools there
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    before = waits.node_slices(k8s, driver.name, node)
    # when: the node's kubelet restarts and the node is Ready again
    node_access.restart_kubelet(node)
    # then: the claim stays prepared, and the driver republishes the pools the kubelet wiped at start-up
    assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    waits.node_republished(k8s, driver.name, before, timeout=timeouts.REPUBLISH_AFTER_RESTART, replaced=True)
    # and: a new pod with a new claim runs on that node and shows its devices
    fresh = waits.pod_running(
        k8s,
        tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node)),
        timeout=timeouts.POD_START,
    )
    shown = probe.shows_claimed_devices(fresh)
    assert shown, shown.evidence
    # and: the old pod runs on in the same containers (read once the restarted kubelet has run a pod)
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), ctrs
    # and: deleting the old pod unprepares its claim (CDI spec removed from the node)
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    gone = waits.poll(
        lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1.0
    )
    assert gone, cdi.claim_specs(node_access, node, claim)
