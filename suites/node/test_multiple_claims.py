"""A pod with several ResourceClaims of the driver: the kubelet names all of a pod's claims of one driver in one
NodePrepareResources (and NodeUnprepareResources) call, and the driver must answer every claim on its own.

Sources: dra-protocols.md §2.3-2.4 (one entry per requested claim UID; the kubelet reports "NodePrepareResources
skipped N ResourceClaims" for missing entries); k8s.io/kubernetes pkg/kubelet/cm/dra/manager.go (claims of a pod
grouped per driver in one call); upstream test/e2e/dra/dra.go "supports simple pod referencing inline resource
claim" / "must map configs and devices to the right containers".
"""

import pytest

from conformance.api import allocated_devices, container, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("PREP-02")]


@pytest.mark.requires("driver.multiple_devices")
@pytest.mark.shard_devices(2)
def test_pod_with_two_claims_maps_each_claim_to_its_container(k8s, tracker, builder, probe):
    """A pod listing two claims, each referenced by one of its containers, runs (one prepare call named both
    and both were answered), and each container sees exactly the device of its own claim.
    Source: upstream "must map configs and devices to the right containers"; dra-protocols.md §2.3."""
    # given: two claims of one device each
    first, second = tracker.create(builder.claim()), tracker.create(builder.claim())
    # when: one pod lists both; container "first" uses the first claim, "second" the second
    pod = tracker.create(builder.pod(containers=[container("first", uses=[first]), container("second", uses=[second])]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: each container sees exactly its own claim's device
    for name in ("first", "second"):
        shown = probe.shows_claimed_devices(pod, name)
        assert shown, shown.evidence


@pytest.mark.requires("driver.multiple_devices", "node_access")
@pytest.mark.shard_devices(2)
def test_one_call_naming_several_claims_answers_each_claim(k8s, tracker, builder, dra_plugin):
    """One NodePrepareResources call naming two prepared claims answers each with its own allocated devices,
    and one NodeUnprepareResources call naming two claims the driver never prepared answers each with success
    (a missing entry is an error of the client: "no entry for claim UID").
    Source: dra-protocols.md §2.3-2.4; kubelet pkg/kubelet/cm/dra/manager.go (one call per driver and pod)."""
    # given: two claims the kubelet prepared for one running pod, and two claims no pod uses
    claims = [tracker.create(builder.claim()) for _ in range(2)]
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claims)), timeout=timeouts.POD_START)
    claims = [waits.claim_allocated(k8s, c, timeout=timeouts.ALLOCATION, reserved_for=[pod]) for c in claims]
    unused = [tracker.create(builder.claim()) for _ in range(2)]
    # when: one call prepares both used claims again, and one call unprepares both unused ones
    plugin = dra_plugin(pod.spec.node_name)
    prepared, unprepared = plugin.prepare_all(claims), plugin.unprepare_all(unused)
    # then: every claim has its own entry: the used ones their allocated devices, the unused ones no error
    for claim in claims:
        expected = {(pool, device) for _, pool, device in allocated_devices(claim)}
        entry = prepared[claim.uid]
        assert entry.error == "" and entry.device_names == expected, (claim.describe(), entry)
    assert [unprepared[c.uid].error for c in unused] == ["", ""], unprepared
