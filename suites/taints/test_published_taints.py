"""Taints the driver publishes itself (ResourceSlice ``devices[].taints``, e.g. a device under maintenance) are
honoured like a DeviceTaintRule's: a claim without a toleration never gets the device, a claim tolerating the
taint does.

Sources: resource.k8s.io/v1 Device.taints, DeviceRequest tolerations (KEP-5055); integration
"EvictClusterWithSlices"; feature-catalog.md §5.J (TAINT-01/02).
"""

import pytest

from conformance.api import request, timeouts, toleration, waits

pytestmark = [
    pytest.mark.taints,
    pytest.mark.full,
    pytest.mark.kep(5055),
    pytest.mark.requires("driver.published_taints"),
]


@pytest.mark.scenario("TAINT-01", "TAINT-02")
def test_published_taint_keeps_claims_off_unless_tolerated(k8s, tracker, builder, published_taint, probe):
    """A claim that only the device with a driver-published taint satisfies is not allocated; the same claim
    tolerating the taint gets the device.
    Source: KEP-5055 (taints in ResourceSlices); upstream "NoSchedule keeps pod pending", "... can be tolerated"."""
    # given: a device the driver publishes with a taint, and a pod that needs exactly it without a toleration
    t = published_taint
    plain = tracker.create(builder.pod(uses=tracker.create(builder.claim(selectors=t.selector)), node_name=t.node))
    waits.pod_unschedulable_with(k8s, plain, "cannot allocate all claims", timeout=timeouts.ALLOCATION)
    # when: a second pod needs the same device with tolerations of its taints
    tolerations = [toleration(x["key"], operator="Exists", effect=x["effect"]) for x in t.taints]
    claim = tracker.create(builder.claim(requests=[request(selectors=t.selector, tolerations=tolerations)]))
    tolerant = tracker.create(builder.pod(uses=claim, node_name=t.node))
    # then: it runs on the device and sees it, and the first stays unscheduled
    waits.pod_running(k8s, tolerant, timeout=timeouts.POD_START)
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [(r.pool, r.device) for r in allocated.results] == [(t.pool, t.name)], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(tolerant)
    assert shown, evidence
    assert not k8s.get("Pod", plain.name, plain.namespace).get("spec.nodeName"), "the untolerating pod got a node"
