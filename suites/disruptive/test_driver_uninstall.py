"""The driver uninstalled with no claim in use: its ResourceSlices go (the kubelet wipes a node's slices of a
driver 30 s after its plugin unregistered; a driver's own controller removes any others) and nothing it
prepared stays on its nodes (no CDI spec of its kind naming a claim). The run reinstalls it afterwards (fixture
``removable_driver``), and only where the run deployed it: a cluster admin's driver (``preinstalled``) is never
removed (capability ``driver_reinstall``). A driver-wide spec naming no claim (dra-example-driver's ``common``
device) is not prepared state and is not judged here.

Sources: KEP-4381 (NodeUnprepareResources removes what prepare set up; plugin de-registration);
pkg/kubelet/cm/dra ``defaultWipingDelay``; kubelet pluginwatcher README ("a plugin should clean up its own
socket upon exiting"); issue 24 §4 "Uninstall: the driver's slices are removed and nothing is left prepared".
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.disruptive, pytest.mark.kep(4381)]


@pytest.mark.requires("driver.cdi", "node_access", "driver_reinstall")
def test_uninstall_removes_the_slices_and_leaves_nothing_prepared(
    k8s, tracker, builder, removable_driver, inventory, node_access
):
    """After a claim's pod is gone (the kubelet's NodeUnprepareResources succeeded) and the driver is removed
    from every node, no ResourceSlice of the driver is left and no node holds a CDI spec of the driver's kind
    that names a claim."""
    # given: a claim the driver prepared (its CDI spec seen on the node), whose pod is gone again
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    specs = cdi.claim_specs(node_access, pod.spec.node_name, claim)
    assert specs, node_access.cdi_specs(pod.spec.node_name)
    kinds = {cdi.kind_of(text) for text in specs.values()}
    k8s.delete("Pod", pod.name, pod.namespace)
    waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
    # when: the driver is uninstalled from every node
    removable_driver.remove_driver()
    # then: its ResourceSlices are gone, and no node holds a claim's CDI spec of its kind
    waits.slices_gone(k8s, removable_driver.name, timeout=timeouts.SLICES_WIPED)
    left = {n: cdi.describe(cdi.claim_bound(node_access.cdi_specs(n), kinds)) for n in inventory.nodes()}
    assert not any(left.values()), f"prepared state left after the uninstall of {removable_driver.name}: {left}"
