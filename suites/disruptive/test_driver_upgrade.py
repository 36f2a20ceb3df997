"""The driver upgraded from its previous version N-1 (the profile's ``upgrade_from``) to the deployed version N
while a pod uses one of its devices, as an operator runs ``helm upgrade``: the plugin pods are replaced node by
node (down, then up). The pod keeps running with the same devices and its CDI spec, the new version unprepares
the claim the old version prepared (from the state the old version left, e.g. its checkpoint, whatever format
it has) and prepares new claims.

Sources: KEP-4381 (unprepare relies on the driver's persisted state; the kubelet keeps prepared claims across
plugin restarts); upstream test/e2e/dra "sequential update with pods replacing each other" (feature catalog
RST-10) with two versions of the driver; CDI SPEC.md (a container gets the edits its CDI device IDs name when it
is created, so a spec rewritten under the same IDs hands a restarted container other devices).

The probe output is what the container printed when it started (no exec into it): read after the upgrade it
proves the un-restarted containers hold exactly the devices allocated now; the CDI spec comparison covers what
the upgrade could change for a container that starts later. dra-example-driver v0.3.0 -> v0.4.0 leaves a
claim's spec file untouched (only its spec-wide ``common`` file is rewritten at start-up, which is no claim's).
"""

import pytest

from conformance.api import allocated_devices, cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-10")]


@pytest.mark.requires("node_access", "driver_upgrade")
def test_pod_keeps_its_device_through_a_driver_upgrade(k8s, tracker, builder, upgradable_driver, node_access, probe):
    """After the upgrade the old pod runs on in the same containers, its probe shows the devices allocated to
    its claim, the allocation is unchanged and the claim's CDI spec gives the same env, device nodes and mounts
    per CDI device ID (what its containers get when they restart); a new pod with a new claim runs with its
    devices, and deleting the old pod unprepares its claim (CDI spec removed). Pods right after a version change
    may see prepare errors until the new plugin registers."""
    # given: the previous version, and a running pod whose claim it prepared (CDI spec on the node)
    upgradable_driver.install_previous()
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START, allow_prepare_errors=True
    )
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    devices, specs = (
        allocated_devices(k8s.get("ResourceClaim", claim.name, claim.namespace)),
        cdi.claim_specs(node_access, node, claim),
    )
    assert specs, node_access.cdi_specs(node)
    # when: the driver is upgraded to the deployed version
    upgradable_driver.upgrade_driver()
    # then: the pod runs on in the same containers, showing its claim's devices, which stay allocated
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), ctrs
    after = k8s.get("ResourceClaim", claim.name, claim.namespace)
    assert allocated_devices(after) == devices, (devices, after.describe())
    shown = probe.shows_claimed_devices(pod)
    assert shown, shown.evidence
    # and: the claim's CDI spec gives its containers the same edits per device as before the upgrade
    same, evidence = cdi.same_edits(specs, cdi.claim_specs(node_access, node, claim))
    assert same, evidence
    # and: a new pod with a new claim runs with its devices
    fresh = tracker.create(builder.pod(uses=tracker.create(builder.claim())))
    shown = probe.shows_claimed_devices(
        waits.pod_running(k8s, fresh, timeout=timeouts.POD_START, allow_prepare_errors=True)
    )
    assert shown, shown.evidence
    # and: deleting the old pod unprepares its claim with the new version (CDI spec removed)
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    gone = waits.poll(lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1)
    assert gone, cdi.left_behind(node_access, node, claim)
