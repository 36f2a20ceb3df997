"""The kubelet <-> driver contract faults of issue 24 §4 (multi-claim-first-only, prepare-unallocated,
unprepare-needs-claim, class-config-last, foreign-config-parsed, invalid-config-ignored) each change exactly
their behaviour against the healthy state machine on temp dirs. Sources: dra-protocols.md §2.3-2.4; upstream
"supports claim and class parameters", "must unprepare resources for force-deleted pod"; KEP-4381."""

from __future__ import annotations

import json
import threading
import time

import pytest

from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import FAULTS, Faults
from reference_driver.plugin import dra, wire
from reference_driver.plugin.dra import DraService
from reference_driver.state import UnprepareError
from tests.reference_driver.helpers import claim, config, gpu_config, result

REF = ClaimRef("ns", "claim-1", "uid-1")
NEW = (
    "multi-claim-first-only",
    "prepare-unallocated",
    "unprepare-needs-claim",
    "class-config-last",
    "foreign-config-parsed",
    "invalid-config-ignored",
)


def _env(state, uid: str = "uid-1") -> list[str]:
    return json.loads(state.store.path(uid).read_text())["devices"][0]["containerEdits"]["env"]


def test_new_faults_are_registered_and_documented():
    """Each new fault is a registry entry of at least one sentence."""
    assert all(len(FAULTS[name]) > 30 for name in NEW)


@pytest.mark.parametrize("faults", ["", "multi-claim-first-only"])
def test_multi_claim_first_only_leaves_out_later_entries(make_state, source, faults):
    """A prepare and an unprepare call naming two claims answer both; with the fault only the first."""
    source.add(claim())
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-1")]))
    msgs = wire.dra_v1()
    service = DraService(make_state(Faults.parse(faults)), msgs, "v1", has_share_id=True)
    refs = [msgs.Claim(namespace="ns", name=f"claim-{i}", uid=f"uid-{i}") for i in (1, 2)]
    prepared = service.node_prepare_resources(msgs.NodePrepareResourcesRequest(claims=refs), None)
    unprepared = service.node_unprepare_resources(msgs.NodeUnprepareResourcesRequest(claims=refs), None)
    expected = {"uid-1"} if faults else {"uid-1", "uid-2"}
    assert set(prepared.claims) == expected and set(unprepared.claims) == expected
    assert all(not prepared.claims[uid].error and prepared.claims[uid].devices for uid in expected)


@pytest.mark.parametrize("faults", ["", "prepare-unallocated"])
def test_prepare_unallocated_succeeds_only_with_the_fault(make_state, source, faults):
    """An unallocated claim is refused naming it; with the fault it is 'prepared' with no devices."""
    source.add(claim(allocated=False))
    state = make_state(Faults.parse(faults))
    if faults:
        assert state.prepare(REF) == []
    else:
        with pytest.raises(ClaimError, match="is not allocated"):
            state.prepare(REF)


@pytest.mark.parametrize("faults", ["", "unprepare-needs-claim"])
def test_unprepare_needs_claim_fails_only_when_the_object_is_gone(make_state, source, faults):
    """Unprepare of a prepared claim whose API object is gone works; with the fault it fails and the CDI spec
    stays. A claim still in the API server unprepares either way."""
    source.add(claim())
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-1")]))
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    state.prepare(ClaimRef("ns", "claim-2", "uid-2"))
    del source.claims[("ns", "claim-1")]
    if faults:
        with pytest.raises(UnprepareError, match="gone from the API server: injected fault unprepare-needs-claim"):
            state.unprepare("uid-1", REF)
    else:
        state.unprepare("uid-1", REF)
    assert state.store.exists("uid-1") == bool(faults)
    state.unprepare("uid-2", ClaimRef("ns", "claim-2", "uid-2"))
    assert not state.store.exists("uid-2")


@pytest.mark.parametrize("faults, value", [("", "claim"), ("class-config-last", "class")])
def test_class_config_last_lets_the_class_win(make_state, source, faults, value):
    """Class and claim configs setting one env var: the claim wins; with the fault the class does."""
    configs = [
        config(gpu_config(None, env={"SETTING": "claim"})),
        config(gpu_config(None, env={"SETTING": "class"}), source="FromClass"),
    ]
    source.add(claim(configs=configs))
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    assert f"SETTING={value}" in _env(state), _env(state)


@pytest.mark.parametrize("faults", ["", "foreign-config-parsed"])
def test_foreign_config_parsed_fails_the_claim(make_state, source, faults):
    """A config of another driver is ignored; with the fault it is parsed and refused."""
    foreign = config({"apiVersion": "other.example.com/v1", "kind": "Other"}, driver="other.example.com")
    source.add(claim(configs=[foreign, config(gpu_config(None, env={"OWN": "yes"}))]))
    state = make_state(Faults.parse(faults))
    if faults:
        with pytest.raises(ClaimError, match="invalid opaque configuration"):
            state.prepare(REF)
    else:
        state.prepare(REF)
        assert "OWN=yes" in _env(state)


@pytest.mark.parametrize("faults", ["", "invalid-config-ignored"])
def test_invalid_config_ignored_prepares_the_claim(make_state, source, faults):
    """An invalid config of this driver fails the claim naming the bad kind; with the fault it is dropped."""
    invalid = {**gpu_config(None), "kind": {"dra-conformance.test/invalid": "no config API defines this kind"}}
    source.add(claim(configs=[config(invalid)]))
    state = make_state(Faults.parse(faults))
    if faults:
        assert state.prepare(REF)
    else:
        with pytest.raises(ClaimError, match="unknown kind .*dra-conformance.test/invalid"):
            state.prepare(REF)


@pytest.mark.parametrize("faults", ["", "prepare-not-concurrent"])
def test_prepare_not_concurrent_refuses_an_overlapping_call(make_state, source, faults, monkeypatch):
    """A prepare call made while another is answered is served; with the fault it fails every claim as busy."""
    monkeypatch.setattr(dra, "BUSY_HOLD_S", 0.5)
    source.add(claim())
    source.add(claim(uid="uid-2", name="claim-2", results=[result("gpu-1")]))
    msgs = wire.dra_v1()
    service = DraService(make_state(Faults.parse(faults)), msgs, "v1", has_share_id=True)
    first = msgs.NodePrepareResourcesRequest(claims=[msgs.Claim(namespace="ns", name="claim-1", uid="uid-1")])
    worker = threading.Thread(target=service.node_prepare_resources, args=(first, None))
    worker.start()
    deadline = time.monotonic() + 5.0
    while faults and not service._busy.locked() and time.monotonic() < deadline:
        time.sleep(0.01)  # until the first call holds the service
    second = msgs.NodePrepareResourcesRequest(claims=[msgs.Claim(namespace="ns", name="claim-2", uid="uid-2")])
    answer = service.node_prepare_resources(second, None).claims["uid-2"]
    worker.join()
    assert ("injected fault prepare-not-concurrent" in answer.error) == bool(faults), answer


@pytest.mark.parametrize("faults", ["", "foreign-results-prepared"])
def test_foreign_results_prepared_takes_another_drivers_result(make_state, source, faults):
    """A claim naming this driver's gpu-0 (request own) and another driver's device of the same pool and name
    (request other) prepares gpu-0 once for request own; with the fault the other driver's result is taken too
    (a second device, for request other)."""
    other = result("gpu-0", request="other", driver="other.example.com")
    source.add(claim(results=[result("gpu-0", request="own"), other]))
    state = make_state(Faults.parse(faults))
    expected = [(("own",), "gpu-0")] + ([(("other",), "gpu-0")] if faults else [])
    assert [(d.request_names, d.device) for d in state.prepare(REF)] == expected
