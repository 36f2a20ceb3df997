"""CEL selectors on attributes and capacities, counts, allocationMode All, and what happens when nothing
matches or a selector fails at runtime. Expected devices are recomputed from the driver's ResourceSlices.

Sources: resource.k8s.io/v1 ExactDeviceRequest.selectors / count / allocationMode; CEL device variable
(dra-protocols.md §6); upstream "keeps pod pending because of CEL runtime errors" (test/e2e/dra/dra.go).
"""

import pytest

from conformance.api import NEVER_MATCHES, cel_attribute, cel_capacity, cel_literal, timeouts, waits

pytestmark = [pytest.mark.allocation, pytest.mark.standard, pytest.mark.kep(4381)]

MISSING_ATTRIBUTE = "draConformanceMissing"  # an attribute id no driver publishes: CEL "no such key"
CANNOT_ALLOCATE = "cannot allocate all claims"  # kube-scheduler DynamicResources: no allocation exists
FILTER_TIMED_OUT = "timed out trying to allocate devices"  # the same plugin when its filterTimeout ends the search


@pytest.mark.scenario("ALLOC-25")
def test_attribute_selector_picks_the_matching_device(k8s, tracker, builder, inventory, probe, numeric_attribute):
    """A CEL selector on an int attribute yields the one device whose published value matches.
    Source: resource.k8s.io/v1 DeviceSelector.cel; device.attributes["<domain>"].<id>."""
    # given: the last published device and one of its int attributes
    name, wanted = numeric_attribute, inventory.devices[-1]
    selector = f"{cel_attribute(name)} == {cel_literal(wanted.attributes[name])}"
    # when: a pod's claim selects on it
    claim = tracker.create(builder.claim(selectors=selector))
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: every allocated device has that value in the slices, and the container sees exactly that device
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [inventory.of(r).attributes[name] for r in allocated.results] == [wanted.attributes[name]]
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-25")
def test_capacity_selector_compares_quantities(k8s, tracker, builder, probe, splitting_capacity):
    """A CEL selector comparing a capacity with quantity() allocates only a device whose published capacity
    satisfies it, on a node where other devices publish less (so ignoring the selector is seen).
    Source: resource.k8s.io/v1 Device.capacity; CEL quantity library (compareTo)."""
    # given: a node whose devices publish different values of one capacity, and the largest of them
    node, name, largest, matching = splitting_capacity
    selector = f'{cel_capacity(name)}.compareTo(quantity("{largest}")) >= 0'
    # when: a pod on that node claims a device with at least that much
    claim = tracker.create(builder.claim(selectors=selector))
    pod = tracker.create(builder.pod(uses=claim, node_name=node))
    pod = waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: the allocated device is one of those publishing the largest value, and the container sees it
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.device in matching for r in allocated.results] == [True], (matching, allocated.describe())
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-25")
@pytest.mark.shard_devices()
def test_selector_matching_nothing_keeps_pod_unschedulable(k8s, tracker, builder):
    """A claim whose selector matches no device leaves the pod unschedulable with the scheduler's DRA reason
    and the claim unallocated.
    Source: scheduler DynamicResources plugin ("cannot allocate all claims")."""
    # given: a claim no device satisfies
    claim = tracker.create(builder.claim(selectors=NEVER_MATCHES))
    # when: a pod uses it
    pod = tracker.create(builder.pod(uses=claim))
    # then: the scheduler reports it cannot allocate, and the claim stays unallocated
    waits.pod_unschedulable_with(k8s, pod, CANNOT_ALLOCATE, timeout=timeouts.ALLOCATION)
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation


@pytest.mark.scenario("ALLOC-18")
def test_cel_runtime_error_keeps_pod_unschedulable(k8s, tracker, builder, driver):
    """A selector that fails at runtime (an attribute no device has) keeps the pod unschedulable and the
    scheduler's message names the CEL runtime error.
    Source: upstream "keeps pod pending because of CEL runtime errors"."""
    # given: a selector reading an attribute that does not exist
    claim = tracker.create(builder.claim(selectors=f"{cel_attribute(driver.name + '/' + MISSING_ATTRIBUTE)} == 1"))
    # when: a pod uses it
    pod = tracker.create(builder.pod(uses=claim))
    # then: unschedulable with a CEL runtime error
    reasons = ("SchedulerError", "Unschedulable")  # 1.34 reports SchedulerError, later releases Unschedulable
    pod = waits.pod_unschedulable_with(k8s, pod, "CEL runtime error", reason=reasons, timeout=timeouts.ALLOCATION)
    assert not pod.spec.node_name, pod.describe()
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation


@pytest.mark.scenario("ALLOC-25")
@pytest.mark.requires("driver.multiple_devices")
def test_count_allocates_that_many_distinct_devices(k8s, tracker, builder, inventory, probe, allocated_once):
    """A request with count 2 gets two distinct devices and the container sees both. Kept to devices allocated
    once: two results may name a multi-allocatable device as two shares (KEP-5075; s15 capacity combination).
    Source: resource.k8s.io/v1 ExactDeviceRequest.count."""
    # given: a claim for two devices (each allocatable once)
    claim = tracker.create(builder.claim(count=2, selectors=allocated_once.selector or None))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: two distinct results for the one request, two devices visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert len({(r.pool, r.device) for r in allocated.results}) == 2, allocated.describe()
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-25")
@pytest.mark.xdist_group("dra-cluster-state")  # takes a whole node
def test_allocation_mode_all_takes_every_device_of_the_node(k8s, tracker, builder, inventory, probe, together_all):
    """allocationMode All allocates every matching device published for the pod's node (matching: the
    devices that can be allocated together, so partitions sharing counters do not make it unsatisfiable).
    Source: resource.k8s.io/v1 DeviceAllocationMode All; KEP-4815 (shared counters)."""
    # given: a node and a claim for all of its devices that can be allocated together
    node = inventory.nodes()[0]
    claim = tracker.create(builder.claim(allocation_mode="All", selectors=together_all.selector))
    # when: a pod on that node uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim, node_name=node)), timeout=timeouts.POD_START)
    # then: the results are exactly those devices, all visible
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert sorted(r.device for r in allocated.results) == sorted(together_all.names_on(node)), allocated.describe()
    shown, evidence = probe.shows_allocation(pod, allocated, inventory)
    assert shown, evidence


@pytest.mark.scenario("ALLOC-25")
def test_count_above_any_node_keeps_pod_unschedulable(k8s, tracker, builder, allocated_once):
    """A count larger than any node's device count cannot be allocated: the pod stays unschedulable. Devices that
    allow multiple allocations are left out (a count above them is satisfiable as shares: KEP-5075). On nodes of
    8 devices the 1.34 allocator may spend its whole DRA filter timeout proving it (it tries every order of the
    devices): that verdict counts too, as no order can satisfy a count above every node's devices.
    Source: resource.k8s.io/v1 ExactDeviceRequest.count; scheduler "cannot allocate all claims" or "timed out
    trying to allocate devices" (KubeSchedulerConfiguration DynamicResourcesArgs.filterTimeout, 10 s)."""
    # given: a count one above the largest node inventory (of devices allocated once)
    count = allocated_once.per_node_max + 1
    # when: a pod's claim asks for it
    claim = tracker.create(builder.claim(count=count, selectors=allocated_once.selector or None))
    pod = tracker.create(builder.pod(uses=claim))
    # then: it is unschedulable
    waits.pod_unschedulable_with(k8s, pod, (CANNOT_ALLOCATE, FILTER_TIMED_OUT), timeout=timeouts.ALLOCATION)
