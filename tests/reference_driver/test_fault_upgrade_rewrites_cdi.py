"""Fault ``upgrade-rewrites-cdi-spec``: after an upgrade (a format 1 checkpoint migrated at start-up) the driver
rewrites the CDI spec of a claim the previous version prepared for the next device by name, under the same CDI
device names; the healthy driver leaves the spec as it was. Only the spec changes: the claim stays prepared
and its unprepare still removes the spec (what the suite checked before it compared the spec's content)."""

from __future__ import annotations

import json

from reference_driver import cdi
from reference_driver.checkpoint import Checkpoint
from reference_driver.claims import ClaimRef
from reference_driver.faults import Faults
from reference_driver.inventory.base import Device
from tests.reference_driver.helpers import claim, result

REF = ClaimRef("ns", "claim-1", "uid-1")
FAULT = Faults.parse("upgrade-rewrites-cdi-spec")


def _prepared_by_previous_version(make_state, source, faults=Faults()):
    """A claim on gpu-1 prepared by a driver writing checkpoint format 1; returns its CDI spec as written."""
    source.add(claim(results=[result("gpu-1")]))
    old = make_state(faults)
    old.checkpoint = Checkpoint(old.checkpoint.path, write_version=1)
    old.prepare(REF)
    return json.loads(old.store.path("uid-1").read_text())


def _env(spec: dict) -> list[str]:
    return spec["devices"][0]["containerEdits"]["env"]


def test_healthy_upgrade_keeps_the_claims_cdi_spec(make_state, source):
    before = _prepared_by_previous_version(make_state, source)
    new = make_state()
    assert new.recover().claims == 1
    assert json.loads(new.store.path("uid-1").read_text()) == before


def test_fault_rewrites_the_spec_for_the_next_device_under_the_same_name(make_state, source):
    before = _prepared_by_previous_version(make_state, source, FAULT)
    faulty = make_state(FAULT)
    assert faulty.recover().claims == 1
    after = json.loads(faulty.store.path("uid-1").read_text())
    assert [d["name"] for d in after["devices"]] == [d["name"] for d in before["devices"]] == ["uid-1-gpu-1"]
    assert "DRA_GPU_DEVICE_GPU_1=gpu-1" in _env(before) and "DRA_GPU_DEVICE_GPU_2=gpu-2" in _env(after)
    assert not any("gpu-1" in e or "GPU_1" in e for e in _env(after)), _env(after)
    uuids = {faulty._snapshot().device(n).attribute("uuid") for n in ("gpu-1", "gpu-2")}
    assert {e.split("=", 1)[1] for e in _env(after) if "_UUID=" in e} < uuids
    assert faulty.prepared()["uid-1"][0].device == "gpu-1", "the kubelet is still told the allocated device"
    assert json.loads(faulty.checkpoint.path.read_text())["version"] == 2
    faulty.unprepare("uid-1")
    assert not faulty.store.exists("uid-1")


def test_fault_acts_only_on_an_upgrade(make_state, source):
    """A restart reading a checkpoint of its own format keeps the spec (the fault is about the migration)."""
    source.add(claim(results=[result("gpu-1")]))
    make_state(FAULT).prepare(REF)
    before = make_state(FAULT).store.path("uid-1").read_text()
    assert make_state(FAULT).recover().claims == 1
    assert make_state(FAULT).store.path("uid-1").read_text() == before


def test_retargeted_swaps_whole_names_keys_and_device_nodes():
    old, new = Device("gpu-1", device_nodes=("/dev/a1",)), Device("gpu-2", device_nodes=("/dev/a2",))
    entry = {
        "name": "u-gpu-1",
        "containerEdits": {
            "env": ["DRA_GPU_DEVICE_GPU_1=gpu-1", "DRA_GPU_GPU_1_POOL=n", "DRA_GPU_GPU_10_POOL=gpu-10", "X=gpu-1x"],
            "deviceNodes": [{"path": "/dev/a1"}],
        },
    }
    out = cdi.retargeted(entry, old, new)
    assert out["name"] == "u-gpu-1"
    assert out["containerEdits"] == {
        "env": ["DRA_GPU_DEVICE_GPU_2=gpu-2", "DRA_GPU_GPU_2_POOL=n", "DRA_GPU_GPU_10_POOL=gpu-10", "X=gpu-1x"],
        "deviceNodes": [{"path": "/dev/a2"}],
    }
    assert entry["containerEdits"]["env"][0] == "DRA_GPU_DEVICE_GPU_1=gpu-1", "the input is not changed"
