"""The faults issue 24 §5 adds for behaviours the matrix had none for: repeated prepares answering other CDI IDs,
fewer devices prepared than allocated, the admin-access signal on a normal claim, one claim's unprepare removing
another claim's CDI spec, slices republished without a change. Each is shown to change exactly its behaviour
against the healthy state machine / publisher on temp dirs and a fake API."""

from __future__ import annotations

import json

import pytest

from reference_driver import publisher
from reference_driver.claims import ClaimRef
from reference_driver.faults import Faults
from tests.reference_driver.helpers import claim, config, gpu_config, result
from tests.reference_driver.test_publisher import make_publisher  # noqa: F401 - the fixture

REF = ClaimRef("ns", "claim-1", "uid-1")
OTHER = ClaimRef("ns", "claim-2", "uid-2")


@pytest.mark.parametrize("faults", ["", "cdi-ids-change-on-repeat"])
def test_repeated_prepare_answers_the_same_cdi_ids_unless_the_fault_is_on(make_state, source, faults):
    source.add(claim())
    state = make_state(Faults.parse(faults))
    first = state.prepare(REF)
    again = state.prepare(REF)
    assert [d.device for d in again] == [d.device for d in first]
    assert (again == first) == (not faults)
    if faults:
        assert again[0].cdi_ids == tuple(f"{c}-r1" for c in first[0].cdi_ids)


@pytest.mark.parametrize("faults", ["", "fewer-devices-prepared"])
def test_every_allocated_device_is_prepared_unless_the_fault_is_on(make_state, source, faults):
    source.add(claim(results=[result("gpu-0", request="a"), result("gpu-1", request="b")]))
    devices = make_state(Faults.parse(faults)).prepare(REF)
    assert [d.device for d in devices] == (["gpu-0"] if faults else ["gpu-0", "gpu-1"])


@pytest.mark.parametrize("faults", ["", "admin-signal-on-normal-claim"])
def test_admin_signal_only_with_the_fault_on_a_normal_claim(make_state, source, faults):
    source.add(claim())
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    spec = json.loads(state.store.path("uid-1").read_text())
    env = [e for d in spec["devices"] for e in d["containerEdits"].get("env", [])]
    assert ("DRA_ADMIN_ACCESS=true" in env) == bool(faults), env


@pytest.mark.parametrize("faults", ["", "unprepare-removes-other-cdi"])
def test_unprepare_leaves_other_claims_specs_unless_the_fault_is_on(make_state, source, faults):
    source.add(claim())
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-1")]))
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    state.prepare(OTHER)
    state.unprepare("uid-1")
    assert not state.store.exists("uid-1")
    assert state.store.exists("uid-2") == (not faults)


@pytest.mark.parametrize("faults", ["", "slices-churn"])
def test_unchanged_slices_are_rewritten_only_with_the_churn_fault(make_publisher, monkeypatch, faults):  # noqa: F811
    make, api, _ = make_publisher
    pub = make(Faults.parse(faults))
    assert pub.sync().generation == 1
    clock = publisher.time.monotonic() + publisher.CHURN_EVERY_S + 1
    monkeypatch.setattr(publisher.time, "monotonic", lambda: clock)
    again = pub.sync()
    assert (again.changed, again.generation, api.writes) == ((True, 2, 2) if faults else (False, 1, 1))


@pytest.mark.parametrize("faults", ["", "device-config-sticks"])
def test_a_later_claim_without_config_gets_none_unless_the_fault_is_on(make_state, source, faults):
    """Breaker s14 B9: a config claim prepared and unprepared on gpu-0, then a claim without config on gpu-0."""
    source.add(claim(configs=[config(gpu_config(None, env={"PROBE": "ok"}))]))
    source.add(claim(uid="uid-2", name="claim-2"))
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    state.unprepare("uid-1")
    state.prepare(OTHER)
    spec = json.loads(state.store.path("uid-2").read_text())
    env = [e for d in spec["devices"] for e in d["containerEdits"].get("env", [])]
    assert ("PROBE=ok" in env) == bool(faults), env
