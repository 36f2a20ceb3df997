"""The profile's ``cdi`` declaration, checked on the node: ``cdi: false`` waives KEP5970-6 and the contract
tests that read CDI specs, so it must be true of the driver, not just declared (breaker finding 4).

Sources: CDI spec directories (dra-protocols.md §4); KEP-4381 NodePrepareResources ``cdi_device_ids``;
issue 24 §1 (waivers are listed, and a waiver that hides a defect is no waiver).
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("PREP-10")
@pytest.mark.requires("node_access")
def test_cdi_specs_of_a_prepared_claim_agree_with_the_profile(k8s, tracker, builder, capabilities, node_access):
    """While its pod runs, the node holds a CDI spec naming the claim's UID exactly when the profile declares
    ``cdi`` (the default); a driver whose profile declares ``cdi: false`` yet writes a spec for the claim fails,
    naming the spec.
    Source: CDI spec directories; KEP-4381 (cdi_device_ids); issue 24 §1 waivers; breaker finding 4."""
    # given: what the profile declares (capability driver.cdi: on unless it says cdi: false)
    declares_cdi = capabilities.has("driver.cdi")
    # when: a pod with a claim runs
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the node holds a spec naming the claim if and only if the profile declares cdi
    specs = cdi.claim_specs(node_access, pod.spec.node_name, claim)
    assert bool(specs) == declares_cdi, (
        f"the profile declares cdi: {str(declares_cdi).lower()}, but CDI spec(s) naming claim {claim.name} "
        f"(UID {claim.uid}) on node {pod.spec.node_name}: {sorted(specs) or 'none'}"
    )
