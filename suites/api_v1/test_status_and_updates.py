"""Spec updates where v1 allows them (DeviceClass selectors, ResourceSlice devices) and the ResourceClaim
status subresource through update and all four patch types.

Sources: upstream test/e2e/dra/dra.go "CRUD Tests" (DeviceClass selector "1 == 0" update; ResourceSlice gains
device-0; ResourceClaim status updated and patched with ``allocation: {}``); resource.k8s.io/v1 types.
"""

import pytest

from conformance.api import (
    EMPTY_ALLOCATION,
    NEVER_MATCHES,
    PATCH_TYPES,
    api_verbs,
    status_patch,
    with_added_device,
    with_selectors,
)

pytestmark = [pytest.mark.api_v1, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("API-01")
def test_device_class_selectors_can_be_updated(k8s, tracker, builder):
    """A DeviceClass's selectors are mutable: an update replaces them.
    Source: upstream "CRUD Tests resource.k8s.io/v1 DeviceClass" (selector updated to "1 == 0")."""
    # given: a class with one selector
    created = tracker.create(builder.device_class(selectors=NEVER_MATCHES))
    # when: its selectors are replaced
    k8s.replace(with_selectors(created, "1 == 0"))
    # then: the stored class has exactly the new selector
    stored = k8s.get("DeviceClass", created.name)
    assert [s["cel"]["expression"] for s in stored.get("spec.selectors")] == ["1 == 0"], stored.describe()


@pytest.mark.scenario("API-04")
def test_resource_slice_gains_a_device_on_update(k8s, tracker, builder):
    """An empty test-made pool slice can be updated to carry a device.
    Source: upstream "CRUD Tests resource.k8s.io/v1 ResourceSlice" (empty pool, then device-0 added)."""
    # given: an empty slice of a fictional driver
    created = tracker.create(builder.resource_slice([], all_nodes=True))
    # when: a device is added by update
    k8s.replace(with_added_device(created))
    # then: the stored slice lists it
    stored = k8s.get("ResourceSlice", created.name)
    assert len(stored.get("spec.devices") or []) == 1, stored.describe()


@pytest.mark.scenario("API-02")
def test_claim_status_can_be_updated(k8s, tracker, builder):
    """PUT on resourceclaims/status stores an (empty) allocation and leaves the spec alone.
    Source: upstream "CRUD Tests resource.k8s.io/v1 ResourceClaim" (status subresource)."""
    # given: an unallocated claim
    claim = tracker.create(builder.claim())
    # when: its status is replaced with an empty allocation
    api_verbs.replace_status(k8s, claim, EMPTY_ALLOCATION)
    # then: the allocation is stored and the spec unchanged
    stored = k8s.get("ResourceClaim", claim.name, claim.namespace)
    assert stored.get("status.allocation") is not None and stored.get("spec") == claim.get("spec"), stored.describe()


@pytest.mark.scenario("API-02")
@pytest.mark.parametrize("patch_type", PATCH_TYPES)
def test_claim_status_accepts_every_patch_type(k8s, tracker, builder, patch_type):
    """json, merge, strategic-merge and apply patches on resourceclaims/status store the status.
    Source: upstream "CRUD Tests resource.k8s.io/v1 ResourceClaim" (all four patch types for status)."""
    # given: an unallocated claim
    claim = tracker.create(builder.claim())
    # when: the empty allocation is patched into its status
    api_verbs.patch(k8s, claim, patch_type, status_patch(claim, patch_type, EMPTY_ALLOCATION), subresource="status")
    # then: stored
    stored = k8s.get("ResourceClaim", claim.name, claim.namespace)
    assert stored.get("status.allocation") is not None, stored.describe()
