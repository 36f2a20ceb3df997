"""HostProcess lifecycle and the on-disk state round trip (what `cluster down` from another process uses)."""

import pytest
from conformance_lab.local import state as statelib
from conformance_lab.local.processes import HostProcess


def test_spawn_stop_restart(tmp_path):
    proc = HostProcess.spawn("sleeper", "n0", ["sleep", "60"], tmp_path / "s.log")
    try:
        assert proc.is_running()
        old = proc.pid
        proc.restart()
        assert proc.is_running() and proc.pid != old
        proc.stop(timeout=2)
        assert not proc.is_running()
        assert "start: sleep 60" in (tmp_path / "s.log").read_text()
    finally:
        proc.stop(timeout=1)


def test_sigterm_ignoring_process_is_killed(tmp_path):
    proc = HostProcess.spawn("stubborn", "", ["sh", "-c", "trap '' TERM; sleep 60"], tmp_path / "x.log")
    proc.stop(timeout=0.5)
    assert not proc.is_running()


def test_a_reused_pid_is_not_taken_for_the_process(tmp_path):
    proc = HostProcess.spawn("p", "", ["sleep", "60"], tmp_path / "p.log")
    try:
        fake = HostProcess.from_dict({**proc.to_dict(), "started": (proc.started or 0) + 1})
        assert not fake.is_running()
    finally:
        proc.stop(timeout=1)


def test_state_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(statelib, "STATE_ROOT", tmp_path)
    st = statelib.ClusterState(name="rt", slot=1, nodes=2, log_dir=str(tmp_path), feature_gates={"DRAX": True})
    proc = HostProcess.spawn("p", "rt-node-0", ["sleep", "60"], tmp_path / "p.log")
    try:
        st.add_process(proc)
        loaded = statelib.ClusterState.load("rt")
        assert loaded.feature_gates == {"DRAX": True}
        assert loaded.process("p", "rt-node-0").is_running()
        assert statelib.existing_clusters() == ["rt"]
    finally:
        proc.stop(timeout=1)
    with pytest.raises(FileNotFoundError, match="no local cluster named 'nope'"):
        statelib.ClusterState.load("nope")


def test_a_slot_recorded_by_another_cluster_is_taken_and_the_provider_moves_on(tmp_path, monkeypatch):
    """Two runs that chose the same free slot at once: the one that records second gets SlotTaken (under the
    host lock, before starting anything) and the provider's next choice skips the recorded slot."""
    from conformance_lab.local import provider

    monkeypatch.setattr(statelib, "STATE_ROOT", tmp_path)
    statelib.ClusterState(name="first", slot=provider.FIRST_SLOT, nodes=1, log_dir=str(tmp_path)).save()
    assert statelib.slots_in_use() == {provider.FIRST_SLOT: "first"}
    assert statelib.slots_in_use(exclude="first") == {}
    assert provider.free_slot() == provider.FIRST_SLOT + 1
    assert issubclass(statelib.SlotTaken, statelib.ClusterUnavailable)
