"""Validation limits of resource.k8s.io/v1: each object one step over a limit is refused as Invalid, naming
the field and the limit; the same object at the limit is accepted where that is cheap to show.

Sources: k/k pkg/apis/resource/validation; integration "InvalidResourceSlices", "MaxResourceSlice"
(feature-catalog LIM-*); dra-protocols.md §5-§6.
"""

import pytest

from conformance.api import Invalid, api_verbs, limits, reserved_for

pytestmark = [pytest.mark.api_v1, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("API-08", "LIM-01", "LIM-08", "LIM-09")
@pytest.mark.parametrize("limit", limits.LIMITS, ids=str)
def test_object_over_a_limit_is_refused_naming_the_field(tracker, builder, limit):
    """An object one step over a v1 limit is refused with 422 Invalid whose cause names the field, the
    expected reason and the limit.
    Source: resource.k8s.io/v1 validation (see conformance/k8s/builders/limits.py for each constant)."""
    # given: an object breaking exactly this limit
    obj = limit.build(builder)
    # when: it is created
    error = api_verbs.refused(lambda: tracker.create(obj))
    # then: Invalid, with a cause on the field carrying the reason and the limit
    assert isinstance(error, Invalid), error
    matching = [c for c in error.causes if c.get("field") == limit.field and c.get("reason") in limit.reasons]
    assert matching and any(limit.text in c.get("message", "") for c in matching), error.causes


@pytest.mark.scenario("LIM-01")
def test_slice_at_the_device_limit_is_accepted(tracker, builder):
    """A slice with exactly 128 devices is accepted (the limit is inclusive).
    Source: ResourceSliceMaxDevices = 128."""
    # given: a slice with the maximum number of devices
    obj = limits.slice_with_devices(builder, limits.MAX_DEVICES_PER_SLICE)
    # when: it is created
    created = tracker.create(obj)
    # then: stored with all of them
    assert len(created.get("spec.devices")) == limits.MAX_DEVICES_PER_SLICE, created.describe()


@pytest.mark.scenario("LIM-09")
def test_reserved_for_over_256_is_refused(k8s, tracker, builder):
    """A claim status listing 257 consumers in reservedFor is refused; 256 are accepted.
    Source: ResourceClaimReservedForMaxSize = 256."""
    # given: a claim
    claim = tracker.create(builder.claim())
    # when: its status is written with 257 consumers
    too_many = reserved_for(limits.MAX_RESERVED_FOR + 1)
    error = api_verbs.refused(lambda: api_verbs.replace_status(k8s, claim, too_many))
    # then: Invalid naming status.reservedFor, while 256 fit
    assert isinstance(error, Invalid), error
    assert ("status.reservedFor", "FieldValueTooMany") in api_verbs.causes(error), error.causes
    stored = api_verbs.replace_status(k8s, claim, reserved_for(limits.MAX_RESERVED_FOR))
    assert len(stored.get("status.reservedFor")) == limits.MAX_RESERVED_FOR
