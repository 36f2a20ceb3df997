"""Checkpoint format 1 -> 2 across an upgrade: a driver writing format 1 (``--checkpoint-format v1``, the
previous version) prepares a claim; the next start (format 2) migrates the file, keeps the claim and its CDI
spec, and unprepares it. Fault ``checkpoint-not-migrated``: the old file is ignored, so the claim is unknown
and its unprepare leaves the CDI spec behind."""

from __future__ import annotations

import json

import pytest

from reference_driver.checkpoint import Checkpoint, CheckpointCorrupt
from reference_driver.claims import ClaimRef
from reference_driver.faults import Faults
from tests.reference_driver.helpers import claim, result

REF = ClaimRef("ns", "claim-1", "uid-1")


def _with_format(state, version: int):
    state.checkpoint = Checkpoint(state.checkpoint.path, write_version=version)
    return state


def test_format_1_and_2_layouts_roundtrip(tmp_path):
    """Both formats read back the same claims; format 2 is a list of entries with their UID."""
    claims = {"u2": {"name": "b", "devices": []}, "u1": {"name": "a", "devices": []}}
    for version, key in ((1, "claims"), (2, "preparedClaims")):
        cp = Checkpoint(tmp_path / f"cp{version}.json", write_version=version)
        cp.save(claims)
        doc = json.loads(cp.path.read_text())
        assert doc["version"] == version and key in doc
        assert cp.load() == claims and cp.loaded_version == version
    assert [e["uid"] for e in json.loads((tmp_path / "cp2.json").read_text())["preparedClaims"]] == ["u1", "u2"]


def test_format_2_damage_is_detected(tmp_path):
    path = tmp_path / "cp.json"
    path.write_text(json.dumps({"version": 2, "checksum": "sha256:00", "preparedClaims": [{"name": "x"}]}))
    with pytest.raises(CheckpointCorrupt, match="uid"):
        Checkpoint(path).load()
    with pytest.raises(ValueError, match="checkpoint format 3"):
        Checkpoint(path, write_version=3)


def test_upgrade_migrates_a_format_1_checkpoint(make_state, source):
    """The upgraded driver keeps the claim prepared by the previous version, rewrites the file as format 2 and
    unprepares the claim (CDI spec removed)."""
    source.add(claim(results=[result("gpu-0")]))
    old = _with_format(make_state(), 1)
    old.prepare(REF)
    assert json.loads(old.checkpoint.path.read_text())["version"] == 1
    new = make_state()
    report = new.recover()
    assert report.claims == 1 and set(new.prepared()) == {"uid-1"}
    assert json.loads(new.checkpoint.path.read_text())["version"] == 2
    assert new.store.exists("uid-1")
    new.unprepare("uid-1")
    assert not new.store.exists("uid-1") and new.prepared() == {}


def test_fault_checkpoint_not_migrated_forgets_the_old_claims(make_state, source):
    """With the fault the format 1 file is ignored: no claim known, and unprepare leaves the CDI spec; a format
    2 file is still read (the fault is about the migration only)."""
    source.add(claim(results=[result("gpu-0")]))
    _with_format(make_state(), 1).prepare(REF)
    faulty = make_state(Faults.parse("checkpoint-not-migrated"))
    assert faulty.recover().claims == 0 and faulty.prepared() == {}
    faulty.unprepare("uid-1")
    assert faulty.store.exists("uid-1"), "the fault's driver leaves the forgotten claim's CDI spec"
    healthy_after = make_state(Faults.parse("checkpoint-not-migrated"))
    healthy_after.prepare(REF)
    assert make_state(Faults.parse("checkpoint-not-migrated")).recover().claims == 1


def test_downgrade_keeps_the_newer_versions_claims(make_state, source):
    """The previous version (writing format 1) started over a format 2 file (a downgrade) keeps the claim the
    newer version prepared, rewrites the file as format 1 and unprepares the claim (CDI spec removed)."""
    source.add(claim(results=[result("gpu-0")]))
    make_state().prepare(REF)
    old = _with_format(make_state(), 1)
    assert old.recover().claims == 1 and set(old.prepared()) == {"uid-1"}
    assert json.loads(old.checkpoint.path.read_text())["version"] == 1
    old.unprepare("uid-1")
    assert not old.store.exists("uid-1") and old.prepared() == {}


def test_fault_downgrade_forgets_newer_checkpoint_leaves_the_claims_cdi_spec(make_state, source):
    """With the fault the previous version ignores the format 2 file: no claim known, and unprepare leaves the
    CDI spec; an upgrade (format 1 file, format 2 writer) is unaffected."""
    source.add(claim(results=[result("gpu-0")]))
    make_state().prepare(REF)
    faulty = _with_format(make_state(Faults.parse("downgrade-forgets-newer-checkpoint")), 1)
    assert faulty.recover().claims == 0 and faulty.prepared() == {}
    faulty.unprepare("uid-1")
    assert faulty.store.exists("uid-1"), "the fault's driver leaves the forgotten claim's CDI spec"
    _with_format(make_state(), 1).prepare(REF)
    assert make_state(Faults.parse("downgrade-forgets-newer-checkpoint")).recover().claims == 1
