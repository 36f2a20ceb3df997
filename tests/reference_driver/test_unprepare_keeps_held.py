"""The fault ``unprepare-needs-claim-cdi-only`` (breaker finding 9): once a claim's API object is gone, its
unprepare removes the CDI spec and answers success, but the device stays held, so the next claim allocated that
device is refused with "already held by". The healthy driver frees it. Sources: upstream "must unprepare
resources for force-deleted pod"; dra-protocols.md §2.4 (unprepare needs only the claim UID)."""

from __future__ import annotations

import pytest

from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import FAULTS, Faults
from tests.reference_driver.helpers import claim, result

FAULT = "unprepare-needs-claim-cdi-only"
FIRST, NEXT = ClaimRef("ns", "claim-1", "uid-1"), ClaimRef("ns", "claim-2", "uid-2")


def test_fault_is_registered_and_documented():
    """The fault is a registry entry of at least one sentence."""
    assert len(FAULTS[FAULT]) > 30


@pytest.mark.parametrize("faults", ["", FAULT])
def test_device_of_a_claim_gone_before_its_unprepare_is_free_only_without_the_fault(make_state, source, faults):
    """A prepared claim deleted from the API server, then unprepared: its CDI spec goes either way; a new
    claim of the same device prepares on the healthy driver and is refused naming the old holder with the
    fault."""
    source.add(claim(results=[result("gpu-0")]))
    state = make_state(Faults.parse(faults))
    state.prepare(FIRST)
    del source.claims[("ns", "claim-1")]
    state.unprepare("uid-1", FIRST)
    assert not state.store.exists("uid-1")
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-0")]))
    if faults:
        with pytest.raises(ClaimError, match=r"gpu-0: needs 1, 1 of 1 already held by unprepared ns/claim-1"):
            state.prepare(NEXT)
    else:
        assert [d.device for d in state.prepare(NEXT)] == ["gpu-0"]


def test_claim_still_in_the_api_server_is_freed_with_the_fault(make_state, source):
    """With the fault, a claim whose object still exists unprepares fully: its device prepares again."""
    source.add(claim(results=[result("gpu-0")]))
    state = make_state(Faults.parse(FAULT))
    state.prepare(FIRST)
    state.unprepare("uid-1", FIRST)
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-0")]))
    assert [d.device for d in state.prepare(NEXT)] == ["gpu-0"]
