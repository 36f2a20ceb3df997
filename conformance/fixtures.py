"""Suite fixtures built on the harness fixtures of :mod:`conformance.plugin` (which registers this module
through ``pytest_plugins``): what a container shows (``probe``), the driver's published devices
(``inventory``) and attributes picked from them, a builder for the admin-access namespace, and a client of the
driver's DRAPlugin service (``dra_plugin``).

Fixtures that pick an attribute or capacity skip, before the test body and with the published devices as
evidence, when the driver publishes none that fits (design.md §8): the rule under test cannot be shown with
such an inventory.
"""

from __future__ import annotations

import pytest

from conformance.core import errors, timeouts
from conformance.dra import device_taints, partitions, shares
from conformance.dra.inventory import Inventory, Together, complete_pools, driver_slices
from conformance.drivers.driver_nodes import ExpectedNodes, expected_nodes
from conformance.k8s import waits
from conformance.node.base import NodeAccessUnavailable
from conformance.node.probe import Probe


def _optional_node_access(request):
    try:
        return request.getfixturevalue("node_access")
    except pytest.skip.Exception:
        return None


@pytest.fixture
def probe(request, k8s, profile, inventory) -> Probe:
    """A :class:`~conformance.node.probe.Probe` for this run (reads the node's log files when pods/log
    fails and the cluster offers node access; names devices from the driver's published ``inventory``)."""
    return Probe(k8s, profile, _optional_node_access(request), inventory)


@pytest.fixture
def device_visible(probe):
    """``device_visible(pod, container=None) -> (visible, evidence)``: :meth:`Probe.sees` (KEP-5970
    behaviour 5: driver-injected env)."""
    return probe.sees


@pytest.fixture
def inventory(k8s, driver) -> Inventory:
    """The driver's published devices right now (:class:`~conformance.dra.inventory.Inventory`)."""
    return Inventory.read(k8s, driver.name)


@pytest.fixture
def driver_nodes(k8s, driver) -> ExpectedNodes:
    """The nodes the driver's deployment asks for (:func:`conformance.drivers.driver_nodes.expected_nodes`:
    host processes, its DaemonSets' placement): "every node" of KEP5970-1/-2 and the smoke test (issue 24 §2)."""
    return expected_nodes(k8s, driver)


@pytest.fixture
def admin_builder(builder, admin_namespace):
    """A Builder like ``builder`` for the namespace labelled ``resource.kubernetes.io/admin-access``."""
    return builder.in_namespace(admin_namespace)


def _pick(inventory: Inventory, what: str, pick):
    try:
        return pick()
    except LookupError as exc:
        pytest.skip(f"{what} not available: {exc}; published (first devices): {inventory.sample()}")


@pytest.fixture
def binding_selector(inventory, profile) -> str:
    """A CEL selector matching exactly one device the driver publishes with ``bindingConditions`` (KEP-5007;
    :meth:`Inventory.with_binding_conditions`, :meth:`Inventory.selector_for`); skips with evidence when none."""
    failing = profile.binding_failure_device  # a device whose attach fails never binds (test_binding_failure)
    return _pick(
        inventory,
        "device with bindingConditions",
        lambda: inventory.selector_for(inventory.with_binding_conditions(skip=failing)),
    )


@pytest.fixture
def binding_failure_selector(inventory, profile) -> str:
    """A CEL selector matching exactly one device named ``profile.binding_failure_device`` (whose attach the
    deployment makes fail) that the driver publishes with ``bindingFailureConditions`` (KEP-5007); skips with
    evidence when the driver publishes none."""

    def pick():
        name = profile.binding_failure_device
        found = [d for d in inventory.devices if d.name == name and d.binding_conditions]
        if not found:
            raise LookupError(f"no device named {name!r} of {inventory.driver} publishes bindingConditions")
        return inventory.selector_for(found[0])

    return _pick(inventory, "device whose binding fails", pick)


@pytest.fixture
def grouping_attribute(inventory) -> str:
    """A string/int attribute some devices of a node share while others differ (matchAttribute and
    distinctAttribute tests); skips with evidence when none."""
    return _pick(inventory, "grouping attribute", inventory.grouping_attribute)


@pytest.fixture
def numeric_attribute(inventory) -> str:
    """An int attribute every device publishes (CEL selector tests); skips with evidence when none."""
    return _pick(inventory, "int attribute", inventory.numeric_attribute)


@pytest.fixture
def unique_attribute(inventory) -> str:
    """An attribute with a different value on every device of a node; skips with evidence when none."""
    return _pick(inventory, "per-device unique attribute", inventory.distinct_attribute)


@pytest.fixture
def unique_per_result(inventory, unique_attribute) -> tuple[str, str]:
    """``(attribute, selector)`` for a test that needs every allocation result of a claim to carry its own value:
    :func:`unique_attribute`, and a CEL selector keeping the claim to devices without allowMultipleAllocations
    (``""`` when no device allows it; KEP-5075: two results of one request may name such a device as two shares,
    sharing every attribute; :func:`conformance.dra.shares.allocated_once`). Skips with evidence when no node has
    two devices allocated once (breaker s12 F8: the skip was driver-wide when any device allowed it)."""
    once = _pick(inventory, "devices allocated once", lambda: shares.allocated_once(inventory, at_least=2))
    return unique_attribute, once.selector


@pytest.fixture
def allocated_once(inventory) -> shares.AllocatedOnce:
    """:class:`conformance.dra.shares.AllocatedOnce`: the selector and per-node count of the devices one claim
    can name once each (a count above it is unsatisfiable); skips with evidence when every device allows multiple
    allocations."""
    return _pick(inventory, "devices allocated once", lambda: shares.allocated_once(inventory))


@pytest.fixture
def too_many(inventory, allocated_once) -> shares.TooMany:
    """:class:`conformance.dra.shares.TooMany`: selectors and a count no node can satisfy, proved so by the
    scheduler in a few steps (a few devices per node, count one above them), within :func:`allocated_once`."""
    return shares.too_many(inventory, allocated_once)


@pytest.fixture
def multi_slice_pool(k8s, driver) -> str:
    """The name of one of the driver's complete pools published as two or more slices (the pool generation
    rule only shows there); skips with each pool's slice count as evidence when every pool is one slice."""
    pools = complete_pools(driver_slices(k8s, driver.name))
    multi = sorted(p for p, items in pools.items() if len(items) > 1)
    if not multi:
        counts = {p: len(items) for p, items in sorted(pools.items())}
        pytest.skip(f"pool of two or more slices not available: slices per complete pool of {driver.name}: {counts}")
    return multi[0]


@pytest.fixture
def splitting_capacity(inventory) -> tuple[str, str, str, list[str]]:
    """``(node, capacity name, value, devices of node publishing >= value)``: a capacity whose values split
    one node's devices (:meth:`Inventory.splitting_capacity`); skips with the capacities seen when none."""
    return _pick(inventory, "capacity that splits a node's devices", inventory.splitting_capacity)


@pytest.fixture
def together(inventory) -> Together:
    """The devices of each node that can be allocated together, with the CEL selector that picks them
    (:meth:`Inventory.together`; tests taking a whole node use it, so partitions sharing counters do not
    make them unsatisfiable); when no group fits, one pinned device of the first node (:meth:`Inventory.pinned`,
    a core test never skips: issue 24 §3); skips with the counter sets as evidence only when neither exists."""

    def together_or_pinned() -> Together:
        try:
            return inventory.together()
        except LookupError:
            return inventory.pinned()

    return _pick(inventory, "devices allocatable together", together_or_pinned)


@pytest.fixture
def together_all(together, capabilities) -> Together:
    """:func:`together` for a test that asks for them with allocationMode All: where those devices consume
    counters (partitions, KEP-4815), skips with the evidence of ``allocator.all_mode_counters`` when the cluster's
    kube-scheduler is a release that panics on such a claim (kubernetes/kubernetes#138882: v1.35.0-v1.35.5,
    v1.36.0-v1.36.1; the run would crash the cluster's scheduler, whatever the driver does)."""
    name = "allocator.all_mode_counters"
    if any(d.consumes for devices in together.by_node.values() for d in devices) and not capabilities.has(name):
        pytest.skip(f"{name} not available: {capabilities.evidence(name)}")
    return together


@pytest.fixture
def together_in_use(together_all, capabilities) -> Together:
    """:func:`together` for a test that gives admin access to devices an ordinary claim holds: where those devices
    consume counters (partitions, KEP-4815), skips with the evidence of ``allocator.admin_access_counters`` when
    the cluster's allocator reserves an admin claim's counters (kubernetes/kubernetes#140729: the admin claim
    could never be allocated, whatever the driver does)."""
    name = "allocator.admin_access_counters"
    if any(d.consumes for devices in together_all.by_node.values() for d in devices) and not capabilities.has(name):
        pytest.skip(f"{name} not available: {capabilities.evidence(name)}")
    return together_all


@pytest.fixture
def partition_packing(inventory) -> partitions.Packing:
    """Partitions of one counter set that fit together and, when the set has one, a device that would
    over-allocate it (:func:`conformance.dra.partitions.packing`); skips with the counter sets as evidence only
    when no counter set is shared by two devices."""
    return _pick(inventory, "a counter set shared by two devices", lambda: partitions.packing(inventory))


@pytest.fixture
def whole_and_partition(inventory) -> tuple:
    """``(whole, partition)``: two devices of one counter set that fit alone but never together
    (:func:`conformance.dra.partitions.whole_and_partition`); skips with the counter sets as evidence when none."""
    return _pick(
        inventory,
        "two devices of a counter set that never fit together",
        lambda: partitions.whole_and_partition(inventory),
    )


@pytest.fixture
def partition(inventory):
    """One partition (:class:`~conformance.dra.inventory.Device`) of a counter set shared by two or more devices
    (:func:`conformance.dra.partitions.partition`); skips with the counter sets as evidence when none."""
    return _pick(inventory, "a partition of a shared counter set", lambda: partitions.partition(inventory))


@pytest.fixture
def shared_device(k8s, driver, inventory) -> shares.SharedDevice:
    """A multi-allocatable device with a capacity two requests can share (:func:`conformance.dra.shares.
    shared_device`); skips with the devices seen as evidence when none."""
    slices = driver_slices(k8s, driver.name)
    return _pick(inventory, "a shareable capacity", lambda: shares.shared_device(driver.name, slices, inventory))


def _kubelet_holds(k8s, ref) -> bool:
    """Whether the kubelet may still hold ``ref`` prepared: its claim exists with that UID, reserved for a pod."""
    try:
        claim = k8s.get("ResourceClaim", ref.name, ref.namespace)
    except errors.NotFound:
        return False
    return claim.uid == ref.uid and bool(claim.reserved_for)


@pytest.fixture
def dra_plugin(request, k8s, driver, tracker):
    """``dra_plugin(node)`` -> a client of the driver's DRAPlugin service on ``node``
    (:class:`conformance.core.handles.DraPlugin`: ``prepare(claim, uid=None)``, ``unprepare(claim, uid=None)``,
    ``serving()``), dialled at the endpoint its registration advertises. Skips, before the test body and with
    the node access mode as evidence, when node access cannot reach the driver's socket (kind, helper pods).
    Teardown (before the tracker's) unprepares every claim prepared through it that the kubelet does not also
    hold (claim gone, another UID, or reserved for no pod) and raises LeakError when such an unprepare fails."""
    access = request.getfixturevalue("node_access")  # skips with evidence when the cluster offers none
    nodes = Inventory.read(k8s, driver.name).nodes()
    try:
        if nodes:
            access.dra_plugin(nodes[0], driver.name)
    except NodeAccessUnavailable as exc:
        pytest.skip(f"node access {access.mode!r} cannot reach the DRA plugin socket of {driver.name}: {exc}")
    clients = []

    def open_client(node: str):
        client = access.dra_plugin(node, driver.name)
        clients.append(client)
        return client

    yield open_client
    failed = []
    for client in clients:
        for ref in list(client.prepared):
            if not _kubelet_holds(k8s, ref):
                result = client.unprepare(ref)
                if result.error:
                    failed.append(f"claim {ref.namespace}/{ref.name} (UID {ref.uid}) on {client!r}: {result.error}")
    if failed:
        raise errors.LeakError(failed, ["NodeUnprepareResources of a claim the test prepared directly failed"])


@pytest.fixture
def taint_target(inventory, unique_attribute) -> device_taints.TaintTarget:
    """A device without published taints on a node that has another one, for DeviceTaintRule tests
    (:func:`conformance.dra.device_taints.untainted`); skips with the tainted devices as evidence when none."""
    return _pick(inventory, "untainted device", lambda: device_taints.untainted(inventory, unique_attribute))


@pytest.fixture
def published_taint(inventory, unique_attribute) -> device_taints.TaintTarget:
    """A device the driver publishes with a NoSchedule/NoExecute taint (:func:`device_taints.published`);
    skips with evidence when the driver publishes none."""
    return _pick(
        inventory, "device with a published taint", lambda: device_taints.published(inventory, unique_attribute)
    )


@pytest.fixture
def removable_driver(k8s, driver):
    """The driver handle of a test that removes the driver (:class:`conformance.core.handles.RemovesDriver`:
    ``remove_driver()``, ``reinstall_driver()``); teardown reinstalls it whatever the test did and waits until
    its slices are published on every node it published on before (later tests find it installed). Use with
    ``requires("driver_reinstall")``."""
    nodes = Inventory.read(k8s, driver.name).nodes()
    yield driver
    driver.reinstall_driver()
    waits.slices_published(k8s, driver.name, nodes=nodes, timeout=timeouts.REPUBLISH_AFTER_RESTART)


@pytest.fixture
def upgradable_driver(k8s, driver):
    """The driver handle of an upgrade test (:class:`conformance.core.handles.UpgradesDriver`:
    ``install_previous()``, ``upgrade_driver()``); teardown upgrades it to the deployed version whatever the
    test did (nothing when it already runs) and waits until its slices are published on every node they were
    published on before. Use with ``requires("driver_upgrade")``."""
    nodes = Inventory.read(k8s, driver.name).nodes()
    yield driver
    driver.upgrade_driver()
    waits.slices_published(k8s, driver.name, nodes=nodes, timeout=timeouts.REPUBLISH_AFTER_RESTART)


@pytest.fixture
def surging_driver(k8s, driver):
    """The driver handle of a rolling-update test (:class:`conformance.core.handles.SurgeUpdatesDriver`:
    ``surge_update()``); teardown puts the DaemonSets' update strategies back and waits until its slices are
    published on every node they were published on before. Use with ``requires("driver_surge_update")``."""
    nodes = Inventory.read(k8s, driver.name).nodes()
    yield driver
    driver.restore_update_strategy()
    waits.slices_published(k8s, driver.name, nodes=nodes, timeout=timeouts.REPUBLISH_AFTER_RESTART)


def health_switch_refusal(k8s) -> str:
    """Why the run's user may not set the health switch, a Node annotation: ``'the run's user cannot patch
    resource "nodes" ...'`` naming the grant; "" when a SelfSubjectAccessReview allows ``patch`` on nodes or the
    review itself is refused (the patch then says what it says). Source: authorization.k8s.io/v1; issue 27 §4 (a
    test needing more than the printed role skips naming the permission)."""
    from conformance.core.permissions import HEALTH_SWITCH  # noqa: PLC0415
    from conformance.k8s import access  # noqa: PLC0415

    try:
        if access.can_i(k8s, HEALTH_SWITCH, "patch"):
            return ""
    except errors.ApiError:
        return ""
    return (
        f'the run\'s user cannot patch resource "nodes" ({HEALTH_SWITCH.why}; not in the role of `dra-conformance '
        "preflight --print-role`, a wide grant): grant `patch` on nodes to run this test"
    )


@pytest.fixture
def health_switch(k8s, profile, driver):
    """The profile's runtime health switch (:class:`conformance.dra.health_switch.HealthSwitch`, KEP-4680);
    teardown turns every touched node Healthy again. Skips as a coverage gap when the profile gives no
    ``health_switch`` (the health-transition test cannot drive the driver) or the run's user may not patch Nodes
    (:func:`health_switch_refusal`)."""
    from conformance.dra.health_switch import HealthSwitch  # noqa: PLC0415

    if not profile.health_annotation:
        pytest.skip(f"health switch not available: profile {profile.name} gives no health_switch.node_annotation")
    refused = health_switch_refusal(k8s)
    if refused:
        pytest.skip(f"health switch not available: {refused}")
    switch = HealthSwitch(k8s, profile.health_annotation.replace("{driver}", driver.name))
    yield switch
    switch.restore()
