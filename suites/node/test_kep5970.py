"""The seven minimum behaviours of KEP-5970 ("DRA Driver Conformance Test Suite"): the ``core`` profile.

Each test proves one behaviour through the API and, where it reaches a container, through the driver
profile's visibility probe (CDI-injected env or a vendor command).
"""

import pytest

from conformance.api import (
    cdi,
    cdi_used,
    check_slices,
    describe_violations,
    driver_slices,
    kubelet,
    node_owner_uids,
    removed_and_unprepared,
    timeouts,
    waits,
)

pytestmark = [pytest.mark.core, pytest.mark.kep(5970)]


@pytest.mark.node
@pytest.mark.scenario("KEP5970-1", "REG-01")
@pytest.mark.shard_devices()
def test_driver_registers_with_every_kubelet(k8s, tracker, builder, driver, inventory, driver_nodes):
    """Every driver node (the nodes its deployment asks for, not those it happens to publish on) serves the
    driver: its devices are published there, the kubelet accepted the plugin and prepares its claims through
    the GA service: a pod using one device runs on each node, and that kubelet's metrics count new successful
    ``v1.DRAPlugin/NodePrepareResources`` calls to the driver (no node access needed).
    Source: KEP-5970 behaviour 1; KEP-4381 (v1 kubelet API, 1.34); upstream "kubelet registers plugin";
    kubelet metric dra_grpc_operations_duration_seconds; issue 24 §2 (expected driver nodes)."""
    # given: the driver's nodes, each with published devices, and each kubelet's calls to the driver so far
    nodes, missing = list(driver_nodes.names), driver_nodes.mismatch(inventory.nodes(), "devices")
    assert nodes and missing is None, missing or f"driver {driver.name}: no expected nodes ({driver_nodes.source})"
    before = {node: kubelet.DraCalls.read(k8s, node, driver.name) for node in nodes}
    # when: a pod with one device of the driver runs on each node
    pods = [tracker.create(builder.pod(uses=tracker.create(builder.claim()), node_name=node)) for node in nodes]
    for pod in pods:
        waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: each kubelet called the driver's v1 NodePrepareResources
    calls = {node: kubelet.DraCalls.read(k8s, node, driver.name).since(before[node]) for node in nodes}
    assert all(kubelet.PREPARE_V1 in c for c in calls.values()), calls


@pytest.mark.node
@pytest.mark.scenario("REG-01")
@pytest.mark.requires("plugin_registration")
def test_registration_socket_advertises_the_v1_service(k8s, driver, driver_nodes, node_access):
    """Each driver node has one registration socket answering GetInfo as a DRAPlugin named after the driver
    that advertises the GA service v1.DRAPlugin, and the kubelet's plugin manager holds that very socket as
    registered (actual state of world).
    Source: pluginregistration v1 GetInfo; KEP-4381 (v1.DRAPlugin, 1.34); kubelet metric
    plugin_manager_total_plugins."""
    # given: the nodes the driver's deployment asks for
    nodes = list(driver_nodes.names)
    # when: their registration sockets are asked GetInfo and their kubelets' metrics are read
    answers = {node: [p for p in node_access.plugin_info(node) if p.get("name") == driver.name] for node in nodes}
    accepted = {node: kubelet.accepted_sockets(kubelet.metrics(k8s, node)) for node in nodes}
    # then: one DRAPlugin socket per node advertises v1.DRAPlugin, and the kubelet registered it
    assert nodes and all(len(a) == 1 and a[0]["type"] == "DRAPlugin" for a in answers.values()), answers
    assert all("v1.DRAPlugin" in a[0]["supported_versions"] for a in answers.values()), answers
    assert all(kubelet.accepts_socket(accepted[n], answers[n][0]["socket"]) for n in nodes), (answers, accepted)


@pytest.mark.publishing
@pytest.mark.scenario("KEP5970-2", "PUB-01", "PUB-11", "LIM-01")
def test_driver_publishes_slices_with_devices(k8s, driver, profile, driver_nodes):
    """The driver publishes complete ResourceSlice pools with at least the profile's devices on each node its
    deployment asks for (and no other),
    and every slice keeps the API's rules (``check_slices``): exactly one of nodeName / nodeSelector / allNodes /
    perDeviceNodeSelection, node-local slices owned by their Node (its current UID), one generation per pool
    with ``resourceSliceCount`` slices, unique device names per pool, size limits, the declared attributes
    with their declared types.
    Source: KEP-5970 behaviour 2; resource.k8s.io/v1 ResourceSliceSpec and ResourcePool; KEP-4381; upstream
    "kubelet must manage ResourceSlices"; issue 24 §2 (expected driver nodes)."""
    # given: the driver's profile (devices per node, declared attributes) and the Nodes' UIDs
    expected, node_uids = profile.devices_per_node, {n.name: n.uid for n in k8s.list("Node")}
    # when: its pools are complete and all its slices are read
    published = waits.slices_published(k8s, driver.name, min_devices=expected, timeout=timeouts.SLICES_PUBLISHED)
    slices = driver_slices(k8s, driver.name)
    # then: every slice keeps the rules, and each node publishes at least the expected devices
    violations = check_slices(slices, driver.name, profile.attributes) + node_owner_uids(slices, node_uids)
    assert violations == [], describe_violations(violations)
    per_node = waits.devices_by_node(published)
    assert driver_nodes.mismatch(per_node, "devices") is None, driver_nodes.mismatch(per_node, "devices")
    assert per_node and all(count >= expected for count in per_node.values()), (
        f"the profile declares devices_per_node {expected}; the driver publishes per node: {per_node}"
    )


@pytest.mark.allocation
@pytest.mark.scenario("KEP5970-3", "ALLOC-04", "ALLOC-25")
@pytest.mark.shard_devices()
def test_claim_is_allocated_when_its_pod_is_scheduled(k8s, tracker, builder, inventory):
    """A ResourceClaim gets status.allocation with one published device of the driver once its pod is
    scheduled, and the allocation is limited to the pod's node.
    Source: KEP-5970 behaviour 3; upstream "supports simple pod referencing external resource claim"."""
    # given: a claim for one device
    claim = tracker.create(builder.claim())
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: one result naming a device published on the pod's node, reserved for the pod
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    assert [r.driver for r in allocated.results] == [inventory.driver], allocated.describe()
    assert inventory.of(allocated.results[0]).node == pod.spec.node_name, allocated.describe()
    assert allocated.allocation_node_names == [pod.spec.node_name], allocated.describe()


@pytest.mark.node
@pytest.mark.scenario("KEP5970-4", "PREP-10", "FAIL-07")
@pytest.mark.shard_devices()
def test_pod_passes_resource_preparation_without_errors(k8s, tracker, builder):
    """The kubelet prepares the pod's claim through NodePrepareResources: the pod starts and no
    FailedPrepareDynamicResources event is recorded.
    Source: KEP-5970 behaviour 4 (NodePrepareResources)."""
    # given: a pod with a claim from a template
    template = tracker.create(builder.claim_template())
    # when: it is started
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=template)), timeout=timeouts.POD_START)
    # then: it runs with its claim allocated, and the kubelet reported no preparation failure
    claims = waits.pod_claims(k8s, pod)
    assert [bool(c.allocation) for c in claims] == [True], [c.describe() for c in claims]
    failures = waits.events_for(k8s, pod, "FailedPrepareDynamicResources")
    assert failures == [], [waits.event_line(e) for e in failures]


@pytest.mark.node
@pytest.mark.scenario("KEP5970-5", "SEC-01")
@pytest.mark.shard_devices()
def test_running_pod_sees_driver_injected_device(k8s, tracker, builder, probe):
    """The pod reaches Running and its container shows the driver-injected device (CDI env or the
    profile's command).
    Source: KEP-5970 behaviour 5; ai-conformance KAR-0049 PositiveAccessTest."""
    # given: a claim for one device
    claim = tracker.create(builder.claim())
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the probe shows exactly the allocated device
    visible, evidence = probe.sees(pod)
    assert visible, evidence
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.node
@pytest.mark.scenario("KEP5970-6", "ALLOC-13", "ALLOC-15")
@pytest.mark.requires("node_access")
@pytest.mark.shard_devices()
def test_pod_deletion_unprepares_without_errors(k8s, tracker, builder, capabilities, inventory, node_access):
    """Deleting a running pod completes (NodeUnprepareResources succeeded), its generated claim is
    deallocated and removed, and the node keeps nothing of the claim: no CDI spec naming it, no PodResources
    entry, nothing prepared. A profile that declares ``cdi: false`` waives only the CDI spec of the claim, not
    this test: while the pod runs, no CDI spec file may appear or change on its node (whatever its name) and
    PodResources must report no CDI device ID for the claim.
    Source: KEP-5970 behaviour 6 (NodeUnprepareResources); driver contract §6.4; breaker finding 1 (s10)."""
    # given: a running pod with a generated claim, whose CDI spec is on the node (none new with cdi: false)
    declares_cdi = capabilities.has("driver.cdi")
    before = {} if declares_cdi else {node: node_access.cdi_specs(node) for node in inventory.nodes()}
    template = tracker.create(builder.claim_template())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=template)), timeout=timeouts.POD_START)
    claim, node = waits.pod_claims(k8s, pod)[0], pod.spec.node_name
    if declares_cdi:
        assert cdi.claim_specs(node_access, node, claim), node_access.cdi_specs(node)
    else:
        used = cdi_used(node_access, before[node], pod, claim)
        assert used.found == [], (
            f"the profile declares cdi: false, but the driver used CDI for claim {claim.name}: {used.describe()}"
        )
    # when: the pod is deleted
    k8s.delete("Pod", pod.name, pod.namespace)
    left = removed_and_unprepared(k8s, node_access, pod, claim, timeout=timeouts.POD_DELETE)
    # then: the claim is gone and the node holds nothing of it
    waits.claim_gone(k8s, claim, timeout=timeouts.DEALLOCATION)
    assert left.found == [], left.describe()


@pytest.mark.allocation
@pytest.mark.scenario("KEP5970-7", "ALLOC-08")
@pytest.mark.xdist_group("dra-cluster-state")  # takes a whole node
def test_new_claim_from_same_class_starts_after_deletion(k8s, tracker, builder, inventory, probe, together_all):
    """After a pod holding every device of its node (those that can be allocated together) is deleted, a
    second pod with a new claim from the same DeviceClass on that node starts and sees the devices.
    Source: KEP-5970 behaviour 7 (resource reuse); upstream "supports reusing resources"."""
    # given: a pod that took every device of one node, then was deleted
    node, whole_node = inventory.nodes()[0], builder.claim(allocation_mode="All", selectors=together_all.selector)
    first = tracker.create(builder.pod(uses=tracker.create(whole_node), node_name=node))
    waits.pod_running(k8s, first, timeout=timeouts.POD_START)
    k8s.delete("Pod", first.name, first.namespace)
    waits.pod_gone(k8s, first, timeout=timeouts.POD_DELETE)
    # when: a second pod with a new claim of the same class needs every device of that node
    whole_node = builder.claim(allocation_mode="All", selectors=together_all.selector)
    second = tracker.create(builder.pod(uses=tracker.create(whole_node), node_name=node))
    # then: it runs and sees all of them
    waits.pod_running(k8s, second, timeout=timeouts.POD_START)
    shown, evidence = probe.shows_devices(second, together_all.names_on(node), inventory.names_on(node))
    assert shown, evidence
