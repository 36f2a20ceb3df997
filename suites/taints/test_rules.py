"""DeviceTaintRules on the driver's devices (KEP-5055): a NoSchedule rule keeps new claims off the device it
names, a NoExecute rule evicts the pod using it, and a claim tolerating the taint gets the device. Every rule
names the driver, pool and device of one published device of the driver under test (never another driver's)
and the tracker deletes it after the test. A NoSchedule rule is used only once the scheduler has applied it
(``waits.taint_rule_applied``: a canary pod needing exactly the device is refused), never racing its informer.

Sources: upstream test/e2e/dra/dra.go "DeviceTaintRule evicts pod", "NoSchedule can be tolerated"; resource.k8s.io
DeviceTaintRule ``spec.deviceSelector``/``spec.taint``; feature-catalog.md §5.J (TAINT-01/02/05).
"""

import pytest

from conformance.api import cdi, leftovers, request, timeouts, toleration, waits

pytestmark = [
    pytest.mark.taints,
    pytest.mark.full,
    pytest.mark.kep(5055),
    pytest.mark.requires("api.devicetaintrules", "driver.taints"),
]

TAINT_KEY = "dra-conformance.test/under-test"
UNALLOCATABLE = "cannot allocate all claims"


@pytest.mark.scenario("TAINT-01")
def test_noschedule_rule_keeps_new_claims_off_the_tainted_device(k8s, tracker, builder, taint_target, probe):
    """While a NoSchedule DeviceTaintRule names one device, a claim that only that device satisfies is not
    allocated, and a claim for every other untainted device of its node gets exactly those, never it.
    Source: KEP-5055 (NoSchedule: no new allocation); upstream "NoSchedule keeps pod pending"."""
    # given: a NoSchedule rule on one device of the driver (driver, pool, device), seen by the scheduler
    t = taint_target
    tracker.create(builder.device_taint_rule(key=TAINT_KEY, effect="NoSchedule", pool=t.pool, device=t.name))
    waits.taint_rule_applied(k8s, tracker, builder, t, UNALLOCATABLE, timeout=timeouts.ALLOCATION)
    # when: one pod needs exactly that device, another every other untainted device of the same node
    only = tracker.create(builder.pod(uses=tracker.create(builder.claim(selectors=t.selector)), node_name=t.node))
    rest_claim = tracker.create(builder.claim(count=len(t.others), selectors=t.group))
    rest = tracker.create(builder.pod(uses=rest_claim, node_name=t.node))
    # then: the first is not scheduled for DRA; the second runs on the other devices and sees exactly them
    waits.pod_unschedulable_with(k8s, only, UNALLOCATABLE, timeout=timeouts.ALLOCATION)
    waits.pod_running(k8s, rest, timeout=timeouts.POD_START)
    allocated = waits.claim_allocated(k8s, rest_claim, timeout=timeouts.ALLOCATION)
    assert sorted(r.device for r in allocated.results) == sorted(t.others), (t, allocated.describe())
    shown, evidence = probe.shows_claimed_devices(rest)
    assert shown, evidence


@pytest.mark.scenario("TAINT-05")
@pytest.mark.requires("driver.cdi")
def test_noexecute_rule_evicts_the_pod_and_releases_its_claim(k8s, tracker, builder, taint_target, node_access):
    """A NoExecute DeviceTaintRule on the device a running pod uses evicts the pod; its claim is deallocated and
    unprepared on the node (no CDI spec, not in PodResources), and while the rule exists the device, still
    published under its name, is not allocated again.
    Source: upstream "DeviceTaintRule evicts pod"; KEP-5055 (NoExecute: eviction by the device taint manager)."""
    # given: a running pod whose claim holds one device of the driver
    t = taint_target
    claim = tracker.create(builder.claim(selectors=t.selector))
    pod = tracker.create(builder.pod(uses=claim, node_name=t.node))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    assert cdi.claim_specs(node_access, t.node, claim), node_access.cdi_specs(t.node)
    # when: a NoExecute rule names that device
    tracker.create(builder.device_taint_rule(key=TAINT_KEY, effect="NoExecute", pool=t.pool, device=t.name))
    # then: the pod is gone, its claim released everywhere, and a new claim for the device is not allocated
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    waits.claim_deallocated(k8s, claim, timeout=timeouts.DEALLOCATION)
    left = leftovers(node_access, t.node, claim)
    assert left.found == [], left.describe()
    again = tracker.create(builder.pod(uses=tracker.create(builder.claim(selectors=t.selector)), node_name=t.node))
    waits.pod_unschedulable_with(k8s, again, UNALLOCATABLE, timeout=timeouts.ALLOCATION)


@pytest.mark.scenario("TAINT-02")
def test_tolerating_claim_gets_the_tainted_device(k8s, tracker, builder, taint_target, probe):
    """A claim whose request tolerates a NoSchedule rule's taint gets the tainted device, and the container sees
    that device (the driver prepares a tolerated tainted device like any other).
    Source: resource.k8s.io DeviceRequest tolerations (KEP-5055); upstream "NoSchedule can be tolerated"."""
    # given: a NoSchedule rule on one device of the driver, seen by the scheduler (a canary needing it is refused)
    t = taint_target
    tracker.create(builder.device_taint_rule(key=TAINT_KEY, effect="NoSchedule", pool=t.pool, device=t.name))
    waits.taint_rule_applied(k8s, tracker, builder, t, UNALLOCATABLE, timeout=timeouts.ALLOCATION)
    # when: a pod's claim asks for exactly that device and tolerates the taint
    tolerates = toleration(TAINT_KEY, operator="Exists", effect="NoSchedule")
    claim = tracker.create(builder.claim(requests=[request(selectors=t.selector, tolerations=[tolerates])]))
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim, node_name=t.node)), timeout=timeouts.POD_START)
    # then: the claim holds that device and the container sees exactly it
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [(r.pool, r.device) for r in allocated.results] == [(t.pool, t.name)], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence
