"""What the kubelet's PodResources API reports for a container is what the container has: the devices named in
the report are the devices the container sees.

The kubelet reports the devices the driver returned from NodePrepareResources, while the container gets the
devices of the CDI spec the driver wrote; monitoring agents (DCGM exporter and the like) join metrics to pods
through this report, so the two must agree.
Sources: KEP-3695 (KubeletPodResourcesDynamicResources); kubelet pkg/kubelet/cm/dra claim info (devices from
the NodePrepareResources response); dra-protocols.md §3.4.
"""

import pytest

from conformance.api import reported_devices, timeouts, waits

pytestmark = [
    pytest.mark.podresources,
    pytest.mark.standard,
    pytest.mark.kep(3695),
    pytest.mark.requires("node_access", "gate.KubeletPodResourcesDynamicResources"),
]


@pytest.mark.shard_devices()
@pytest.mark.scenario("PRA-04")
@pytest.mark.requires("driver.cdi")
def test_reported_devices_are_the_devices_the_container_sees(k8s, tracker, builder, inventory, node_access, probe):
    """The device names PodResources reports for a container are exactly the devices its probe shows, among
    the devices the driver publishes on that node.
    Source: PodResources v1 ClaimResource.device_name (KEP-3695); upstream "must map configs and devices to the
    right containers"."""
    # given: a running pod with one claim
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    # when: the node's kubelet reports the pod's resources
    entries = node_access.pod_resources(node).dynamic_resources(pod.name, pod.namespace)
    reported = sorted(device for _, _, device in reported_devices(entries.get("ctr", [])))
    # then: something is reported, and it is exactly what the container sees
    assert reported, entries
    shown, evidence = probe.shows_devices(pod, reported, inventory.names_on(node))
    assert shown, f"PodResources reports {reported}; {evidence}"
