"""Faults of the kubelet-plugin contract the kubelet path cannot reach (issue 11): a repeated prepare, an
unprepare of a claim never prepared, prepared state forgotten across a plugin restart. Each is shown to change
exactly its behaviour against the healthy state machine on temp dirs."""

from __future__ import annotations

import pytest

from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import Faults
from reference_driver.state import UnprepareError
from tests.reference_driver.helpers import claim

REF = ClaimRef("ns", "claim-1", "uid-1")


@pytest.mark.parametrize("faults", ["", "prepare-not-idempotent"])
def test_prepare_not_idempotent_fails_only_the_repeat(make_state, source, faults):
    """The first prepare works either way; the repeat answers the same devices, or the injected error."""
    source.add(claim())
    state = make_state(Faults.parse(faults))
    first = state.prepare(REF)
    if faults:
        with pytest.raises(ClaimError, match="already prepared: injected fault prepare-not-idempotent"):
            state.prepare(REF)
    else:
        assert state.prepare(REF) == first
    assert state.store.exists("uid-1")


@pytest.mark.parametrize("faults", ["", "unprepare-unknown-error"])
def test_unprepare_unknown_error_fails_only_unknown_claims(make_state, source, faults):
    """Unprepare of a never-prepared UID errors with the fault; a prepared claim still unprepares."""
    source.add(claim())
    state = make_state(Faults.parse(faults))
    if faults:
        with pytest.raises(UnprepareError, match="not prepared here: injected fault unprepare-unknown-error"):
            state.unprepare("never-prepared")
    else:
        state.unprepare("never-prepared")
    state.prepare(REF)
    state.unprepare("uid-1")
    assert state.prepared() == {} and not state.store.exists("uid-1")


@pytest.mark.parametrize("faults", ["", "forget-prepared-on-restart"])
def test_forget_prepared_on_restart_leaves_cdi_spec_after_unprepare(make_state, source, faults):
    """After a restart (a new instance on the same dirs) the faulty driver knows no claim and its unprepare
    leaves the CDI spec; the healthy one recovers the claim and removes the spec."""
    source.add(claim())
    make_state(Faults.parse(faults)).prepare(REF)
    restarted = make_state(Faults.parse(faults))
    report = restarted.recover()
    assert report.claims == (0 if faults else 1)
    assert set(restarted.prepared()) == (set() if faults else {"uid-1"})
    restarted.unprepare("uid-1")
    assert restarted.store.exists("uid-1") == bool(faults)
