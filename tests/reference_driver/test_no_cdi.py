"""The reference driver as a driver without CDI (``--no-cdi``, the profile fixtures/self-validation/
reference-no-cdi.yaml declares ``cdi: false``) and the fault ``cdi-undeclared`` that makes that untrue."""

from __future__ import annotations

from reference_driver import DRIVER_NAME
from reference_driver.cdi import CdiStore, UnnamedCdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.claims import ClaimRef
from reference_driver.config import from_args
from reference_driver.faults import Faults
from reference_driver.inventory import SimulatedInventory, SimulatedSpec
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import NODE, FakeClaimSource, claim, result
from tests.reference_driver.test_main import argv

REF = ClaimRef("ns", "claim-1", "uid-1")


def _state(tmp_path, writes: bool, store_type: type[CdiStore] = CdiStore) -> DeviceState:
    inventory = SimulatedInventory(SimulatedSpec(count=4), NODE)
    source = FakeClaimSource(claim(results=[result("gpu-0")]))
    store = store_type(tmp_path / "cdi", writes=writes)
    return DeviceState(DRIVER_NAME, {NODE}, inventory.snapshot, source, store, Checkpoint(tmp_path / "cp.json"))


def test_no_cdi_writes_no_spec_and_names_no_cdi_device(tmp_path):
    """``--no-cdi``: prepare answers the device with no CDI ID and leaves the CDI directory empty; without it
    (or with the fault cdi-undeclared, which ignores the flag) the claim's spec is written."""
    quiet = _state(tmp_path / "quiet", writes=False)
    (device,) = quiet.prepare(REF)
    assert device.cdi_ids == () and quiet.store.claim_uids() == set(), device
    quiet.unprepare(REF)
    loud = _state(tmp_path / "loud", writes=True)
    (device,) = loud.prepare(REF)
    assert device.cdi_ids and loud.store.claim_uids() == {"uid-1"}, device


def test_the_flag_and_the_fault_reach_the_config(tmp_path):
    cfg = from_args(argv(tmp_path)[2:] + ["--no-cdi"], env={"NODE_NAME": "n1"})
    assert cfg.no_cdi and not cfg.faults.on("cdi-undeclared")
    faulty = from_args(
        argv(tmp_path)[2:] + ["--no-cdi"], env={"NODE_NAME": "n1", "DRA_REFERENCE_FAULTS": "cdi-undeclared"}
    )
    assert faulty.faults.on("cdi-undeclared") and Faults.parse("cdi-undeclared").on("cdi-undeclared")


def test_fault_cdi_undeclared_by_name_writes_a_spec_without_the_uid_and_names_no_cdi_device(tmp_path):
    """Fault ``cdi-undeclared-by-name`` (UnnamedCdiStore under --no-cdi): prepare names no CDI ID, yet one spec
    file appears whose name and text carry no claim UID; unprepare removes it."""
    state = _state(tmp_path, writes=False, store_type=UnnamedCdiStore)
    (device,) = state.prepare(REF)
    (spec,) = (tmp_path / "cdi").iterdir()
    assert device.cdi_ids == () and "uid-1" not in spec.name and "uid-1" not in spec.read_text(), spec
    assert spec.name.startswith(f"{DRIVER_NAME}_spec-") and "gpu-0" in spec.read_text()
    state.unprepare(REF.uid)
    assert list((tmp_path / "cdi").iterdir()) == []


def test_main_picks_the_store_of_the_flag_and_faults(tmp_path):
    from reference_driver.__main__ import _cdi_store

    def store(faults=""):
        cfg = from_args(argv(tmp_path)[2:] + ["--no-cdi"], env={"NODE_NAME": "n1", "DRA_REFERENCE_FAULTS": faults})
        return _cdi_store(cfg)

    assert type(store()) is CdiStore and not store().writes
    assert type(store("cdi-undeclared")) is CdiStore and store("cdi-undeclared").writes
    assert type(store("cdi-undeclared-by-name")) is UnnamedCdiStore and not store("cdi-undeclared-by-name").writes
