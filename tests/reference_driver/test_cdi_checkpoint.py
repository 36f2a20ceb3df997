"""CDI spec content and files; the versioned checkpoint."""

from __future__ import annotations

import json

import pytest

from reference_driver import cdi
from reference_driver.checkpoint import Checkpoint, CheckpointCorrupt, CheckpointVersionError
from reference_driver.claims import AllocatedDevice, ClaimRef
from reference_driver.inventory import SimulatedInventory, SimulatedSpec
from reference_driver.opaque import GpuConfig, Sharing

REF = ClaimRef("ns", "c", "0a1b-uid")
SNAP = SimulatedInventory(SimulatedSpec(count=2), "n").snapshot()


def test_spec_has_one_device_per_allocation_with_env_contract():
    """Names start with the claim UID (cdiVersion 0.5.0 allows a leading digit); env names device and config."""
    allocs = [
        (
            AllocatedDevice(
                "gpu",
                "n",
                "gpu-0",
                config=GpuConfig(Sharing("Exclusive"), (("X", "1"),)),
                config_sources=("FromClaim[0]",),
            ),
            SNAP.device("gpu-0"),
        ),
        (AllocatedDevice("gpu", "n", "gpu-1", admin_access=True), SNAP.device("gpu-1")),
    ]
    spec, ids = cdi.build_spec(REF, allocs)
    assert spec["cdiVersion"] == "0.5.0" and spec["kind"] == "gpu.dra-conformance.test/gpu"
    assert ids == ["gpu.dra-conformance.test/gpu=0a1b-uid-gpu-0", "gpu.dra-conformance.test/gpu=0a1b-uid-gpu-1"]
    env0, env1 = (set(d["containerEdits"]["env"]) for d in spec["devices"])
    assert {
        "DRA_GPU_DEVICE_GPU_0=gpu-0",
        "DRA_GPU_GPU_0_SHARING_STRATEGY=Exclusive",
        "X=1",
        "DRA_GPU_GPU_0_CONFIG_SOURCES=FromClaim[0]",
        "DRA_GPU_GPU_0_CLAIM=ns/c",
    } <= env0
    assert f"DRA_GPU_GPU_0_UUID={SNAP.device('gpu-0').attribute('uuid')}" in env0
    assert {
        "DRA_GPU_GPU_1_ADMIN_ACCESS=true",
        "DRA_ADMIN_ACCESS=true",
        "DRA_GPU_GPU_1_SHARING_STRATEGY=TimeSlicing",
    } <= env1
    assert not any("ADMIN" in e for e in env0)


def test_skip_env_fault_keeps_spec_valid_but_hides_device():
    spec, _ = cdi.build_spec(REF, [(AllocatedDevice("gpu", "n", "gpu-0"), SNAP.device("gpu-0"))], skip_env=True)
    assert spec["devices"][0]["containerEdits"]["env"] == ["DRA_REFERENCE_FAULT=skip-cdi-env"]


def test_two_shares_of_one_device_get_distinct_names():
    allocs = [
        (AllocatedDevice("gpu", "n", "gpu-0", share_id=s), SNAP.device("gpu-0")) for s in ("aaaa1111", "bbbb2222")
    ]
    _, ids = cdi.build_spec(REF, allocs)
    assert len(set(ids)) == 2


def test_store_writes_atomically_and_removes(tmp_path):
    store = cdi.CdiStore(tmp_path)
    path = store.write("u1", {"cdiVersion": "0.5.0"})
    assert json.loads(path.read_text()) == {"cdiVersion": "0.5.0"}
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temp file left behind"
    assert store.claim_uids() == {"u1"}
    assert store.remove("u1") and not store.remove("u1") and not path.exists()


def test_checkpoint_roundtrip_and_missing_file(tmp_path):
    cp = Checkpoint(tmp_path / "cp.json")
    assert cp.load() == {}
    cp.save({"u": {"devices": []}})
    assert cp.load() == {"u": {"devices": []}}
    assert json.loads(cp.path.read_text())["version"] == 2


@pytest.mark.parametrize(
    "content, error",
    [
        (b"{not json", CheckpointCorrupt),
        (b'{"claims": {}}', CheckpointCorrupt),
        (b'{"version": 1, "checksum": "sha256:00", "claims": {}}', CheckpointCorrupt),
        (b'{"version": 99, "claims": {}}', CheckpointVersionError),
    ],
)
def test_checkpoint_damage_is_detected(tmp_path, content, error):
    """Bad JSON, missing version, checksum mismatch and unknown versions raise, naming the file."""
    path = tmp_path / "cp.json"
    path.write_bytes(content)
    with pytest.raises(error, match=str(path)):
        Checkpoint(path).load()


def test_checkpoint_edited_entry_fails_checksum(tmp_path):
    cp = Checkpoint(tmp_path / "cp.json")
    cp.save({"u": {"name": "a"}})
    cp.path.write_text(cp.path.read_text().replace('"a"', '"b"'))
    with pytest.raises(CheckpointCorrupt, match="checksum"):
        cp.load()


def test_driver_name_sets_cdi_kind_and_file_prefix(tmp_path):
    """A driver started with --driver-name writes specs of kind <driver>/gpu under its own file prefix."""
    store = cdi.CdiStore(tmp_path, "e2e-1.gpu.dra-conformance.test")
    spec, ids = cdi.build_spec(REF, [(AllocatedDevice("gpu", "n", "gpu-0"), SNAP.device("gpu-0"))], kind=store.kind)
    assert spec["kind"] == "e2e-1.gpu.dra-conformance.test/gpu" and ids[0].startswith(
        "e2e-1.gpu.dra-conformance.test/gpu="
    )
    assert store.path("u").name == "e2e-1.gpu.dra-conformance.test_claim-u.json"


def test_deferred_removal_keeps_the_spec_until_its_timer(tmp_path, monkeypatch):
    """Fault unprepare-cdi-deferred: remove() answers at once and the spec goes only when the timer fires."""
    import threading

    monkeypatch.setattr(cdi, "DEFERRED_REMOVAL_S", 0.2)
    store = cdi.DeferredRemovalCdiStore(tmp_path)
    path = store.write("u1", {"cdiVersion": "0.5.0"})
    assert store.remove("u1") and path.exists()
    done = threading.Event()
    for _ in range(50):
        if not path.exists():
            done.set()
            break
        threading.Event().wait(0.05)
    assert done.is_set(), "the deferred removal never ran"
