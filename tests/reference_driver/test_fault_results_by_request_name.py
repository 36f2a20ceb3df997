"""Fault ``results-by-request-name``: a claim's allocation results looked up by its spec request names, one per
name, so a request's second result (count 2, allocationMode All) and every firstAvailable result
(``<request>/<subrequest>``) go unprepared; a claim with one result per exact request is prepared as healthy.
The symptoms are the ones fixtures/faults.yaml expects (ALLOC-25 count / All, PL-01, PL-03).
Sources: resource.k8s.io/v1 DeviceRequestAllocationResult.request; KEP-4816 (firstAvailable)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from reference_driver import DRIVER_NAME
from reference_driver.claims import ClaimError, ClaimRef, allocated_devices, by_request_name
from reference_driver.faults import FAULTS, Faults
from tests.reference_driver.helpers import NODE, claim, result

REF = ClaimRef("ns", "claim-1", "uid-1")
FAULT = "results-by-request-name"
FAULTS_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "faults.yaml"
ENTRY = yaml.safe_load(FAULTS_FILE.read_text(encoding="utf-8"))["faults"][FAULT]


def _claim(requests: list[str], results: list[dict], **meta) -> dict:
    obj = claim(results=results, **meta)
    obj["spec"]["devices"]["requests"] = [{"name": name} for name in requests]
    return obj


def _symptom(test: str) -> str:
    """The symptom faults.yaml expects of ``test`` (its own, else the fault's)."""
    own = [e["symptom"] for e in ENTRY["expect"] if isinstance(e, dict) and e["test"].endswith("::" + test)]
    return (own or [ENTRY["symptom"]])[0]


def _cdi_devices(state) -> list[str]:
    spec = json.loads(state.store.path("uid-1").read_text())
    return [e.split("=", 1)[1] for d in spec["devices"] for e in d["containerEdits"]["env"] if "_DEVICE_" in e]


def test_fault_is_registered_and_documented():
    """The fault is in the registry with a description, and the faults file lists the tests it must fail."""
    assert len(FAULTS[FAULT]) > 100
    tests = [e["test"] if isinstance(e, dict) else e for e in ENTRY["expect"]]
    assert "suites/allocation/test_selectors.py::test_count_allocates_that_many_distinct_devices" in tests
    pl03 = "suites/prioritized_list/test_first_available.py::test_constraints_on_the_parent_request_steer_the_choice"
    assert pl03 in tests


@pytest.mark.parametrize("faults, prepared", [("", ["gpu-1", "gpu-2"]), (FAULT, ["gpu-2"])])
def test_count_two_keeps_only_the_last_result_of_the_request(make_state, source, faults, prepared):
    """Two results of request gpu (count 2): both prepared; with the fault only the later one, and the probe
    judgement of ALLOC-25 count (two expected, one shown) matches the fault's symptom."""
    source.add(_claim(["gpu"], [result("gpu-1"), result("gpu-2")]))
    state = make_state(Faults.parse(faults))
    devices = state.prepare(REF)
    assert [d.device for d in devices] == prepared and _cdi_devices(state) == prepared
    assert all(d.request_names == ("gpu",) for d in devices)
    evidence = f"expected {['gpu-1', 'gpu-2']}, the probe shows {prepared}"  # conformance.node.probe.shows_devices
    assert bool(re.search(_symptom("test_count_allocates_that_many_distinct_devices"), evidence, re.I)) == bool(faults)


@pytest.mark.parametrize(
    "test, chosen",
    [
        ("test_first_subrequest_is_chosen_when_it_fits", ["gpu/one"]),
        ("test_falls_back_in_order_to_the_first_satisfiable_subrequest", ["gpu/two", "gpu/two"]),
        ("test_constraints_on_the_parent_request_steer_the_choice", ["gpu/one"]),
    ],
)
def test_first_available_results_are_refused_with_the_symptom(make_state, source, test, chosen):
    """Results of a firstAvailable request (``gpu/<sub>``): prepared under the base request name gpu; with the
    fault no result is named after request gpu and the claim is refused with the PL tests' symptom (the kubelet's
    event text around the per-claim error)."""
    results = [result(f"gpu-{k}", request) for k, request in enumerate(chosen)]
    source.add(_claim(["gpu"], results))
    healthy = make_state().prepare(REF)
    assert [d.request_names for d in healthy] == [("gpu",)] * len(chosen)
    source.add(_claim(["gpu"], results, uid="uid-2", name="claim-2"))
    with pytest.raises(ClaimError) as refused:
        make_state(Faults.parse(FAULT)).prepare(ClaimRef("ns", "claim-2", "uid-2"))
    event = f"FailedPrepareDynamicResources: NodePrepareResources failed for ResourceClaim claim-2: {refused.value}"
    assert re.search(_symptom(test), event, re.I), event


def test_one_result_per_exact_request_is_prepared_as_healthy(make_state, source):
    """Two exact requests with one result each (the isolation tests' claim): the fault prepares both, in request
    order, unlike fewer-devices-prepared; only a request with several results or a subrequest shows it."""
    source.add(_claim(["b", "a"], [result("gpu-0", "a"), result("gpu-3", "b")]))
    devices = make_state(Faults.parse(FAULT)).prepare(REF)
    assert [(d.request_names, d.device) for d in devices] == [(("b",), "gpu-3"), (("a",), "gpu-0")]


def test_by_request_name_names_requests_and_results_when_nothing_is_left():
    """The pure lookup: a request without a result of its name is left out; nothing left raises ClaimError
    naming the spec requests and the results' request names."""
    devices = allocated_devices(_claim(["gpu", "nic"], [result("gpu-0", "nic")]), REF, DRIVER_NAME, {NODE})
    assert [d.device for d in by_request_name(_claim(["gpu", "nic"], []), REF, devices)] == ["gpu-0"]
    subrequest = allocated_devices(_claim(["gpu", "nic"], [result("gpu-0", "gpu/one")]), REF, DRIVER_NAME, {NODE})
    with pytest.raises(ClaimError, match=r"no allocation result for request gpu, nic \(the results name gpu/one\)"):
        by_request_name(_claim(["gpu", "nic"], []), REF, subrequest)
