"""Immutability rules of resource.k8s.io/v1: ResourceClaim and ResourceClaimTemplate specs, a ResourceSlice's
driver, pool name and node, and an allocation once set; refused as Invalid "field is immutable".

Sources: k/k pkg/apis/resource/validation (ValidateResourceClaimUpdate, ValidateResourceSliceUpdate,
ValidateResourceClaimStatusUpdate); dra-protocols.md §5.3-§5.4.
"""

import re

import pytest

from conformance.api import EMPTY_ALLOCATION, Invalid, api_verbs, with_field

pytestmark = [pytest.mark.api_v1, pytest.mark.standard, pytest.mark.kep(4381), pytest.mark.scenario("API-08")]

# apiserver wording of an immutability rejection: "field is immutable" (1.34-1.36); 1.37's declarative
# validation of status.allocation says "field cannot be modified once set" (measured on v1.37.2).
IMMUTABLE = re.compile(r"field is immutable|cannot be modified once set")

CASES = [
    pytest.param(lambda b: b.claim(), "spec.devices.requests.0.exactly.count", 2, "spec", id="claim-spec"),
    pytest.param(
        lambda b: b.claim_template(), "spec.spec.devices.requests.0.exactly.count", 2, "spec", id="template-spec"
    ),
    pytest.param(
        lambda b: b.resource_slice([], all_nodes=True),
        "spec.driver",
        "other.dra-conformance.test",
        "spec.driver",
        id="slice-driver",
    ),
    pytest.param(
        lambda b: b.resource_slice([], all_nodes=True),
        "spec.pool.name",
        "other-pool",
        "spec.pool.name",
        id="slice-pool-name",
    ),
]


@pytest.mark.parametrize("build, path, value, field", CASES)
def test_immutable_field_cannot_change(k8s, tracker, builder, build, path, value, field):
    """Updating an immutable field is refused as Invalid with "field is immutable" on that field, and the
    stored object is unchanged.
    Source: resource.k8s.io/v1 validation (update rules)."""
    # given: a stored object
    created = tracker.create(build(builder))
    # when: the immutable field is changed by update
    error = api_verbs.refused(lambda: k8s.replace(with_field(created, path, value)))
    # then: Invalid, naming the field; stored spec unchanged
    assert isinstance(error, Invalid), error
    assert any(c.get("field") == field and IMMUTABLE.search(c.get("message", "")) for c in error.causes), error.causes
    assert k8s.get(created.kind, created.name, created.namespace or None).get("spec") == created.get("spec")


def test_allocation_cannot_change_once_set(k8s, tracker, builder):
    """Once status.allocation is set it cannot be replaced by another allocation (only removed).
    Source: ValidateResourceClaimStatusUpdate ("field is immutable" on status.allocation)."""
    # given: a claim whose status holds an empty allocation
    claim = api_verbs.replace_status(k8s, tracker.create(builder.claim()), EMPTY_ALLOCATION)
    # when: the allocation is replaced by one naming a device
    changed = with_field(
        claim,
        "status.allocation",
        {
            "devices": {
                "results": [
                    {"request": "device", "driver": builder.test_driver_name(), "pool": "pool", "device": "dev-0"}
                ]
            }
        },
    )
    error = api_verbs.refused(lambda: k8s.replace(changed, subresource="status"))
    # then: Invalid on status.allocation
    assert isinstance(error, Invalid), error
    assert any(
        c.get("field") == "status.allocation" and IMMUTABLE.search(c.get("message", "")) for c in error.causes
    ), error.causes


def test_device_class_spec_is_mutable(k8s, tracker, builder):
    """A DeviceClass spec (unlike a claim's) may change: an update with another selector is accepted.
    Source: resource.k8s.io/v1 DeviceClass (no immutability rule); upstream CRUD conformance test."""
    # given: a class
    created = tracker.create(builder.device_class(selectors="1 == 0"))
    # when: its first selector is updated
    updated = k8s.replace(with_field(created, "spec.selectors.1.cel.expression", "2 == 0"))
    # then: stored
    assert updated.get("spec.selectors.1.cel.expression") == "2 == 0", updated.describe()
