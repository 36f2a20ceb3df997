"""Concurrent NodePrepareResources calls for distinct claims on one node: the kubelet's pod workers prepare the
claims of pods that start together in parallel, and the driver must serve every call.

Sources: k8s.io/kubernetes pkg/kubelet/cm/dra/manager.go (NodePrepareResources is called outside the claim
info cache lock, one call per pod and driver, so pods starting together call the driver concurrently);
ai-conformance KAR-0049 (pod A cannot reach pod B's device); dra-protocols.md §2.3.
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("SEC-04")]

PODS = 3  # pods started together on one node (fewer when the node has fewer devices)


@pytest.mark.requires("driver.multiple_devices")
def test_pods_started_together_on_one_node_all_run_with_their_own_devices(k8s, tracker, builder, together, probe):
    """Several pods, each with its own claim, created at once on one node: all run without a
    FailedPrepareDynamicResources (no prepare call was refused for being concurrent), and each sees exactly
    its own claim's device. The claims pick among the node's devices that can be allocated together (on a
    partitioning driver, e.g. all 1g partitions, never a whole GPU beside its partitions: otherwise the third
    pod may find no counters left, s15 feature combinations); the node with the most such devices is taken;
    fewer than two pods would show no concurrency, so that skips as a coverage gap instead of passing (breaker
    finding 7).
    Source: pkg/kubelet/cm/dra/manager.go; ai-conformance KAR-0049; KEP-4815 (shared counters)."""
    # given: the node with the most devices allocatable together, one claim per pod (at most PODS) among them
    node = max(sorted(together.by_node), key=lambda n: len(together.names_on(n)))
    count = min(PODS, len(together.names_on(node)))
    if count < 2:
        pytest.skip(f"two devices allocatable together on one node not available: the most is {count} ({node})")
    claims = [tracker.create(builder.claim(selectors=together.selector)) for _ in range(count)]
    # when: one pod per claim is created at once on that node
    pods = [tracker.create(builder.pod(uses=claim, node_name=node)) for claim in claims]
    # then: every pod runs with no prepare error and sees exactly its own claim's device
    for pod in pods:
        waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
        shown = probe.shows_claimed_devices(pod)
        assert shown, shown.evidence
