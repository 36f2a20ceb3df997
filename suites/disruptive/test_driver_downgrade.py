"""The driver downgraded from the deployed version N to its previous version N-1 (the profile's ``upgrade_from``)
while a pod uses one of its devices, as an operator rolls back with ``helm upgrade`` to the older chart: the
plugin pods are replaced node by node. The old version must keep the pod running with the same devices and
CDI spec, unprepare the claim the new version prepared (from the state N left, e.g. a checkpoint in N's
format), and prepare new claims; otherwise the driver does not support downgrade, which its profile can
declare (``upgrade_from.downgrade: false``: this test is skipped and the report lists ``downgrade`` as not
claimed).

Sources: KEP-4381 (unprepare relies on the driver's persisted state; the kubelet keeps prepared claims across
plugin restarts); NVIDIA's DRA driver release testing (upgrade and downgrade N <-> N-1 with workloads running);
upstream test/e2e/dra "sequential update with pods replacing each other" (RST-10) run the other way round; the
upgrade lane (suites/disruptive/test_driver_upgrade.py), whose handle and checks this test reuses.
"""

import pytest

from conformance.api import allocated_devices, cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381), pytest.mark.scenario("RST-10")]

NOT_SUPPORTED = "the driver does not support downgrade from N to N-1"


@pytest.mark.requires("node_access", "driver_downgrade")
def test_pod_keeps_its_device_through_a_driver_downgrade(k8s, tracker, builder, upgradable_driver, node_access, probe):
    """After the downgrade the pod runs on in the same containers with the devices allocated to its claim and the
    same CDI edits per device; a new pod with a new claim runs; deleting the old pod makes N-1 unprepare the
    claim N prepared (CDI spec removed). Any of these failing means the driver does not support downgrade.
    Pods right after a version change may see prepare errors until the plugin registers again."""
    # given: the deployed version N, and a running pod whose claim it prepared (CDI spec on the node)
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node, ctrs = pod.spec.node_name, waits.containers(pod)
    devices, specs = (
        allocated_devices(k8s.get("ResourceClaim", claim.name, claim.namespace)),
        cdi.claim_specs(node_access, node, claim),
    )
    assert specs, node_access.cdi_specs(node)
    # when: the driver is downgraded to the previous version
    upgradable_driver.install_previous()
    # then: the pod runs on in the same containers, showing its claim's devices, which stay allocated
    assert not waits.restarted_containers(ctrs, k8s.get("Pod", pod.name, pod.namespace)), (NOT_SUPPORTED, ctrs)
    after = k8s.get("ResourceClaim", claim.name, claim.namespace)
    assert allocated_devices(after) == devices, (NOT_SUPPORTED, devices, after.describe())
    shown = probe.shows_claimed_devices(pod)
    assert shown, (NOT_SUPPORTED, shown.evidence)
    same, evidence = cdi.same_edits(specs, cdi.claim_specs(node_access, node, claim))
    assert same, (NOT_SUPPORTED, evidence)
    # and: a new pod with a new claim runs with its devices under the previous version
    fresh = tracker.create(builder.pod(uses=tracker.create(builder.claim())))
    shown = probe.shows_claimed_devices(
        waits.pod_running(k8s, fresh, timeout=timeouts.POD_START, allow_prepare_errors=True)
    )
    assert shown, (NOT_SUPPORTED, shown.evidence)
    # and: deleting the old pod makes the previous version unprepare the claim the new one prepared
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    gone = waits.poll(lambda: not cdi.claim_specs(node_access, node, claim), timeout=timeouts.KUBELET_RETRY, interval=1)
    assert gone, f"{NOT_SUPPORTED}: {cdi.left_behind(node_access, node, claim)}"
