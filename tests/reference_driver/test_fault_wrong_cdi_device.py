"""Fault ``wrong-cdi-device``: NodePrepareResources returns, and writes the CDI spec for, the next device of the
node by name instead of the allocated one (the suite's device-naming checks must catch it)."""

from __future__ import annotations

import json

from reference_driver.claims import ClaimRef
from reference_driver.faults import FAULTS, Faults
from tests.reference_driver.helpers import claim, result

REF = ClaimRef("ns", "claim-1", "uid-1")


def _spec_env(state) -> list[str]:
    spec = json.loads(state.store.path("uid-1").read_text())
    return [e for d in spec["devices"] for e in d["containerEdits"]["env"] if e.startswith("DRA_GPU_DEVICE_")]


def test_wrong_cdi_device_prepares_the_next_device_by_name(make_state, source):
    """gpu-1 -> gpu-2 and gpu-3 -> gpu-0 (wrapping) in the answer, the CDI IDs and the spec's env; the
    request names stay those of the allocation."""
    source.add(claim(results=[result("gpu-1"), result("gpu-3", "other")]))
    devices = make_state(Faults.parse("wrong-cdi-device")).prepare(REF)
    assert [(d.device, d.request_names) for d in devices] == [("gpu-2", ("gpu",)), ("gpu-0", ("other",))]
    assert all(d.cdi_ids[0].endswith(f"uid-1-{d.device}") for d in devices), devices
    assert _spec_env(make_state()) == ["DRA_GPU_DEVICE_GPU_2=gpu-2", "DRA_GPU_DEVICE_GPU_0=gpu-0"]
    assert "wrong-cdi-device" in FAULTS


def test_without_the_fault_the_allocated_devices_are_prepared(make_state, source):
    source.add(claim(results=[result("gpu-1"), result("gpu-3", "other")]))
    devices = make_state().prepare(REF)
    assert [d.device for d in devices] == ["gpu-1", "gpu-3"]
    assert _spec_env(make_state()) == ["DRA_GPU_DEVICE_GPU_1=gpu-1", "DRA_GPU_DEVICE_GPU_3=gpu-3"]
