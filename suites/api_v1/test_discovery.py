"""Discovery: resource.k8s.io/v1 is served with the four DRA resources and their verbs, plus the claim status
subresource.

Sources: ai-conformance KAR-0051 proposed TestAcceleratorResourceExposureAllocation (PR #74); API discovery
(/apis/resource.k8s.io/v1).
"""

import pytest

from conformance.api import CORE_KINDS

pytestmark = [pytest.mark.api_v1, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("API-06")]

VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
STATUS_VERBS = {"get", "patch", "update"}


def _resources(k8s) -> dict:
    return {r["name"]: r for r in k8s.get_json("/apis/resource.k8s.io/v1").get("resources") or []}


@pytest.mark.parametrize("kind", CORE_KINDS, ids=str)
def test_v1_serves_the_resource_with_every_verb(k8s, kind):
    """/apis/resource.k8s.io/v1 lists the resource with its kind, scope and the full verb set.
    Source: KAR-0051 discovery check."""
    # given: the v1 discovery document
    resources = _resources(k8s)
    # when: the resource is looked up
    entry = resources.get(kind.plural, {})
    # then: kind, scope and verbs
    assert (entry.get("kind"), entry.get("namespaced")) == (kind.name, kind.namespaced), entry
    assert VERBS <= set(entry.get("verbs") or []), entry


def test_v1_serves_the_claim_status_subresource(k8s):
    """resourceclaims/status is served with get, patch and update.
    Source: resource.k8s.io/v1 ResourceClaim status subresource (upstream CRUD conformance test)."""
    # given: the v1 discovery document
    resources = _resources(k8s)
    # when: the status subresource is looked up
    entry = resources.get("resourceclaims/status", {})
    # then: its verbs
    assert STATUS_VERBS <= set(entry.get("verbs") or []), entry
