"""The profile's ``cdi`` declaration, checked on the node: ``cdi: false`` waives KEP5970-6 and the contract
tests that read CDI specs, so it must be true of the driver, not just declared (breaker finding 4).

Sources: CDI spec directories (dra-protocols.md §4); KEP-4381 NodePrepareResources ``cdi_device_ids``;
issue 24 §1 (waivers are listed, and a waiver that hides a defect is no waiver).
"""

import pytest

from conformance.api import cdi, cdi_used, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("PREP-10")
@pytest.mark.requires("node_access")
def test_cdi_specs_of_a_prepared_claim_agree_with_the_profile(
    k8s, tracker, builder, capabilities, inventory, node_access
):
    """While its pod runs, the node holds a CDI spec naming the claim's UID when the profile declares ``cdi``
    (the default); when it declares ``cdi: false``, no CDI spec file appears or changes on the node while the
    claim is prepared (whatever its name or text) and PodResources reports no CDI device ID for the claim: a
    driver that uses CDI anyway fails, naming the files and IDs.
    Source: CDI spec directories; KEP-4381 (cdi_device_ids); issue 24 §1 waivers; breaker findings 4 and 1 (s10)."""
    # given: what the profile declares (capability driver.cdi: on unless it says cdi: false), the nodes' specs
    declares_cdi = capabilities.has("driver.cdi")
    before = {} if declares_cdi else {node: node_access.cdi_specs(node) for node in inventory.nodes()}
    # when: a pod with a claim runs
    claim = tracker.create(builder.claim())
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=claim)), timeout=timeouts.POD_START)
    # then: the node holds a spec naming the claim if the profile declares cdi, and nothing of CDI otherwise
    if declares_cdi:
        specs = cdi.claim_specs(node_access, pod.spec.node_name, claim)
        assert specs, f"the profile declares cdi, but no CDI spec on node {pod.spec.node_name} names claim " + (
            f"{claim.name} (UID {claim.uid}): {sorted(node_access.cdi_specs(pod.spec.node_name))}"
        )
    else:
        used = cdi_used(node_access, before[pod.spec.node_name], pod, claim)
        assert used.found == [], (
            f"the profile declares cdi: false, but the driver used CDI for claim {claim.name}: {used.describe()}"
        )
