"""Placement across nodes: node-local claims pin pods to the node of their devices.

Sources: upstream test/e2e/dra/dra.go "with node-local resources uses all resources" (multi-node);
resource.k8s.io/v1 AllocationResult.nodeSelector.
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.allocation, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.requires("multi_node")]


@pytest.mark.scenario("ALLOC-19")
@pytest.mark.xdist_group("dra-cluster-state")  # takes whole nodes
def test_pods_taking_a_whole_node_each_land_on_different_nodes(k8s, tracker, builder, inventory, probe, together):
    """Pods whose claims each need every device of one node (count = the fewest devices that can be allocated
    together on any node) spread over distinct nodes; each allocation's devices are on the pod's node.
    Source: upstream "with node-local resources uses all resources"."""
    # given: one claim per driver node, each for a whole node's worth of devices
    claims = [builder.claim(count=together.smallest(), selectors=together.selector) for _ in inventory.nodes()]
    pods = [tracker.create(builder.pod(uses=tracker.create(claim))) for claim in claims]
    # when: they are scheduled
    pods = [waits.pod_running(k8s, p, timeout=timeouts.POD_START) for p in pods]
    # then: one pod per node, every device on the pod's node, all visible
    assert sorted(p.spec.node_name for p in pods) == inventory.nodes(), [p.spec.node_name for p in pods]
    for pod in pods:
        claim = waits.pod_claims(k8s, pod)[0]
        assert {inventory.of(r).node for r in claim.results} == {pod.spec.node_name}, claim.describe()
        shown, evidence = probe.shows_allocation(pod, claim, inventory)
        assert shown, evidence
