"""Fault ``device-by-position``: the claim's k-th allocated device is prepared as the node's k-th device by name,
right for the first free devices of an idle node and wrong for any other (breaker finding 3)."""

from __future__ import annotations

import json

import pytest

from reference_driver.claims import ClaimRef
from reference_driver.faults import FAULTS, Faults
from tests.reference_driver.helpers import claim, result

REF = ClaimRef("ns", "claim-1", "uid-1")


def _spec_env(state) -> list[str]:
    spec = json.loads(state.store.path("uid-1").read_text())
    return [e for d in spec["devices"] for e in d["containerEdits"]["env"] if e.startswith("DRA_GPU_DEVICE_")]


@pytest.mark.parametrize(
    "allocated, prepared",
    [
        (["gpu-0"], ["gpu-0"]),  # the first free device of an idle node: right by chance
        (["gpu-0", "gpu-1", "gpu-2", "gpu-3"], ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]),  # every device: right too
        (["gpu-2"], ["gpu-0"]),  # any other device: wrong
        (["gpu-3", "gpu-1"], ["gpu-0", "gpu-1"]),
    ],
)
def test_device_by_position_prepares_the_node_s_kth_device(make_state, source, allocated, prepared):
    source.add(claim(results=[result(name, f"r{k}") for k, name in enumerate(allocated)]))
    devices = make_state(Faults.parse("device-by-position")).prepare(REF)
    assert [d.device for d in devices] == prepared
    assert [d.request_names for d in devices] == [(f"r{k}",) for k in range(len(allocated))]
    assert all(d.cdi_ids[0].endswith(f"uid-1-{d.device}") for d in devices), devices
    assert _spec_env(make_state()) == [f"DRA_GPU_DEVICE_{n.upper().replace('-', '_')}={n}" for n in prepared]
    assert "device-by-position" in FAULTS


def test_without_the_fault_the_allocated_device_is_prepared(make_state, source):
    source.add(claim(results=[result("gpu-2")]))
    assert [d.device for d in make_state().prepare(REF)] == ["gpu-2"]
    assert _spec_env(make_state()) == ["DRA_GPU_DEVICE_GPU_2=gpu-2"]
