"""The DRA kubelet plugin contract, checked by calling the driver's DRAPlugin service the way the kubelet does,
for cases a test cannot make the kubelet produce on demand: a repeated prepare (the kubelet repeats calls after
a restart), an unprepare of a claim the driver never prepared (the kubelet unprepares claims whose state it
lost), and a claim whose UID no longer matches the API object (deleted and re-created under the same name).
Every call is made for a real claim of the test's own namespace; what a test prepares directly and the kubelet
does not hold is unprepared after it (``dra_plugin`` fixture).

Sources: dra-protocols.md §2.3-2.4 (prepare idempotent, "got replaced" UID check, unknown claim UIDs are
success for unprepare); upstream test/e2e/dra/test-driver kubeletplugin.go; k8s.io/dynamic-resource-allocation
kubeletplugin helper; feature catalog PREP-09.
"""

import pytest

from conformance.api import allocated_devices, cdi, replaced_uid, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("PREP-09")]


@pytest.mark.requires("driver.cdi", "node_access")
@pytest.mark.shard_devices()
def test_repeated_prepare_returns_the_same_devices_and_cdi_ids(k8s, tracker, builder, node_access, dra_plugin):
    """NodePrepareResources for a claim the kubelet already prepared answers, without error, the allocated
    devices and the CDI IDs of the claim's own spec (plus driver-wide ones), the same on every repeat."""
    # given: a claim the kubelet prepared for a running pod
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    claim = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
    node = pod.spec.node_name
    # when: NodePrepareResources is called for it again, twice
    plugin = dra_plugin(node)
    again, once_more = plugin.prepare(claim), plugin.prepare(claim)
    # then: no error; the allocated devices; CDI IDs the claim's spec defines; both answers equal
    assert again.error == "", again
    assert again.device_names == {(pool, device) for _, pool, device in allocated_devices(claim)}, again
    own, evidence = cdi.ids_belong_to(node_access, node, claim, again.cdi_ids)
    assert own, evidence
    assert once_more == again, (once_more, again)


@pytest.mark.requires("driver.cdi", "node_access")
def test_unprepare_of_a_claim_never_prepared_succeeds(k8s, tracker, builder, inventory, node_access, dra_plugin):
    """NodeUnprepareResources for a claim the driver never prepared answers success for that claim (an entry
    without error; the client refuses an answer without the entry) and leaves nothing for it on the node."""
    # given: a claim of this namespace that no pod uses, so no node prepared it
    claim = tracker.create(builder.claim())
    node = inventory.nodes()[0]
    assert cdi.claim_specs(node_access, node, claim) == {}, node_access.cdi_specs(node)
    # when: NodeUnprepareResources is called for it on a driver node
    result = dra_plugin(node).unprepare(claim)
    # then: that claim's entry has no error and the node holds no CDI spec for it
    assert result.uid == claim.uid and result.error == "", result
    assert cdi.claim_specs(node_access, node, claim) == {}, node_access.cdi_specs(node)


@pytest.mark.requires("driver.cdi", "node_access")
@pytest.mark.shard_devices()
def test_prepare_with_a_replaced_uid_fails_for_that_claim(k8s, tracker, builder, node_access, dra_plugin):
    """NodePrepareResources naming an allocated claim by namespace and name but with a UID the API object
    does not have fails for that claim: no device, and no CDI spec for that UID on the node."""
    # given: an allocated claim, reserved for a running pod
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    node = pod.spec.node_name
    # when: NodePrepareResources names it with another UID (the claim was deleted and re-created)
    stale = replaced_uid(claim.uid)
    result = dra_plugin(node).prepare(claim, uid=stale)
    # then: that claim's entry carries an error and no device; nothing was written for that UID
    assert result.uid == stale and result.error, result
    assert result.devices == (), result
    assert cdi.specs_naming(node_access.cdi_specs(node), stale) == {}, node_access.cdi_specs(node)


@pytest.mark.requires("node_access")
def test_prepare_of_an_unallocated_claim_fails_for_that_claim(
    k8s, tracker, builder, inventory, node_access, dra_plugin
):
    """NodePrepareResources for a claim without status.allocation fails for that claim: an entry with an error
    and no device, and no CDI spec naming its UID on the node.
    Source: upstream test/e2e/dra/test-driver kubeletplugin.go; dra-example-driver
    cmd/dra-example-kubeletplugin/state.go computeDeviceConfig ("claim not yet allocated"); dra-protocols.md
    §2.3."""
    # given: a claim no pod uses, so nothing allocated it
    claim = tracker.create(builder.claim())
    node = inventory.nodes()[0]
    assert not k8s.get("ResourceClaim", claim.name, claim.namespace).allocation
    # when: NodePrepareResources is called for it on a driver node
    result = dra_plugin(node).prepare(claim)
    # then: that claim's entry carries an error and no device; nothing was written for it
    assert result.error, f"the driver prepared an unallocated claim {claim.namespace}/{claim.name}: {result}"
    assert result.devices == (), result
    assert cdi.specs_naming(node_access.cdi_specs(node), claim.uid) == {}, node_access.cdi_specs(node)
