"""The device state machine on temp dirs: idempotency, unknown claims, restart, corrupt checkpoint, faults."""

from __future__ import annotations

import json

import pytest

from reference_driver.checkpoint import CheckpointVersionError
from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import Faults
from reference_driver.state import UnprepareError
from tests.reference_driver.helpers import claim, config, gpu_config, result

REF = ClaimRef("ns", "claim-1", "uid-1")


def test_prepare_is_idempotent_and_writes_one_spec(make_state, source):
    """A repeated prepare returns the same devices without reading the claim again."""
    source.add(claim(results=[result("gpu-0"), result("gpu-1", "other/sub")]))
    state = make_state()
    first = state.prepare(REF)
    second = state.prepare(REF)
    assert first == second and source.reads == 1
    assert [(d.device, d.request_names) for d in first] == [("gpu-0", ("gpu",)), ("gpu-1", ("other",))]
    assert state.store.claim_uids() == {"uid-1"}


def test_prepare_refuses_unknown_replaced_and_missing_devices(make_state, source):
    state = make_state()
    with pytest.raises(ClaimError, match="not found"):
        state.prepare(REF)
    source.add(claim(uid="new-uid"))
    with pytest.raises(ClaimError, match="got replaced"):
        state.prepare(REF)
    source.add(claim(results=[result("gpu-99")]))
    with pytest.raises(ClaimError, match="gpu-99 is not in this node's inventory"):
        state.prepare(REF)
    assert state.prepared() == {} and state.store.claim_uids() == set()


def test_api_error_becomes_claim_error(make_state, source):
    source.fail = RuntimeError("connection refused")
    with pytest.raises(ClaimError, match="reading the claim failed: connection refused"):
        make_state().prepare(REF)


def test_unprepare_unknown_claim_succeeds_and_is_idempotent(make_state, source):
    source.add(claim())
    state = make_state()
    state.unprepare("never-prepared")
    state.prepare(REF)
    state.unprepare("uid-1")
    state.unprepare("uid-1")
    assert state.prepared() == {} and not state.store.exists("uid-1")


def test_restart_recovers_from_checkpoint_and_rewrites_missing_cdi(make_state, source):
    """A new instance on the same dirs knows the claim, restores its CDI spec and can unprepare it."""
    source.add(claim())
    devices = make_state().prepare(REF)
    spec_path = make_state().store.path("uid-1")
    original = spec_path.read_text()
    spec_path.unlink()
    restarted = make_state(claim_source=type(source)())  # the API no longer has the claim
    report = restarted.recover()
    assert report.claims == 1 and report.rewritten == ("uid-1",)
    assert spec_path.read_text() == original
    assert restarted.prepare(REF) == devices
    restarted.unprepare("uid-1")
    assert not spec_path.exists()


def test_corrupt_checkpoint_is_quarantined_and_leftover_spec_removed_on_unprepare(make_state, source):
    source.add(claim())
    state = make_state()
    state.prepare(REF)
    state.checkpoint.path.write_text("{garbage")
    restarted = make_state()
    report = restarted.recover()
    assert report.quarantined and report.claims == 0
    assert not restarted.checkpoint.path.exists()
    restarted.unprepare("uid-1")
    assert not restarted.store.exists("uid-1")


def test_checkpoint_of_another_version_stops_recovery(make_state):
    state = make_state()
    state.checkpoint.path.parent.mkdir(parents=True)
    state.checkpoint.path.write_text(json.dumps({"version": 3, "claims": {}}))
    with pytest.raises(CheckpointVersionError):
        state.recover()
    assert state.checkpoint.path.exists(), "another version's state is never discarded"


def test_config_for_another_driver_does_not_change_env(make_state, source):
    source.add(claim(configs=[config(gpu_config("Exclusive"), driver="other.example.com")]))
    state = make_state()
    state.prepare(REF)
    env = json.loads(state.store.path("uid-1").read_text())["devices"][0]["containerEdits"]["env"]
    assert "DRA_GPU_GPU_0_SHARING_STRATEGY=TimeSlicing" in env and "DRA_GPU_GPU_0_CONFIG_SOURCES=none" in env


@pytest.mark.parametrize(
    "fault",
    ["prepare-error", "unprepare-error", "leak-device-to-all-containers", "unprepare-keeps-cdi", "skip-uid-check"],
)
def test_faults_change_exactly_their_behaviour(make_state, source, fault):
    source.add(claim(uid="other-uid" if fault == "skip-uid-check" else "uid-1"))
    state = make_state(Faults.parse(fault))
    if fault == "prepare-error":
        with pytest.raises(ClaimError, match="injected fault"):
            state.prepare(REF)
        return
    devices = state.prepare(REF)
    if fault == "leak-device-to-all-containers":
        assert devices[0].request_names == ()
    if fault == "unprepare-error":
        with pytest.raises(UnprepareError, match="injected fault"):
            state.unprepare("uid-1")
        return
    state.unprepare("uid-1")
    assert state.store.exists("uid-1") == (fault == "unprepare-keeps-cdi")


def test_prepare_connection_refused_fails_every_claim_with_that_text(make_state, source):
    source.add(claim(uid="uid-1"))
    state = make_state(Faults.parse("prepare-connection-refused"))
    with pytest.raises(
        ClaimError, match=r"injected fault prepare-connection-refused: .*\[Errno 111\] Connection refused"
    ):
        state.prepare(REF)
