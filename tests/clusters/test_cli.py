"""`dra-conformance cluster ...` parsing and bad-input exits (nothing is started on bad input)."""

import argparse

import pytest
from conformance_lab import cluster_cli as cli
from conformance_lab.local.config import STATE_ROOT


def _parser():
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    return parser


def test_up_parses_every_option():
    args = _parser().parse_args(
        [
            "cluster",
            "up",
            "--nodes",
            "3",
            "--kwok-nodes",
            "2",
            "--feature-gates",
            "defaults",
            "--k8s-version",
            "1.35",
            "--name",
            "x",
            "--log-dir",
            "/tmp/l",
        ]
    )
    assert (args.nodes, args.kwok_nodes, args.feature_gates, args.k8s_version, args.name) == (
        3,
        2,
        "defaults",
        "1.35",
        "x",
    )
    assert callable(args.func)


def test_bad_feature_gate_mode_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as err:
        _parser().parse_args(["cluster", "up", "--feature-gates", "most"])
    assert err.value.code == 2
    assert "invalid choice: 'most'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,needle", [(["--nodes", "0"], "nodes=0 is out of range"), (["--k8s-version", "1.99"], "not pinned")]
)
def test_bad_up_input_exits_1_and_starts_nothing(argv, needle, capsys):
    name = "clibadinput"
    args = _parser().parse_args(["cluster", "up", "--name", name, *argv])
    assert args.func(args) == 1
    assert needle in capsys.readouterr().err
    assert not (STATE_ROOT / name).exists()


@pytest.mark.parametrize("action", ["down", "status", "logs"])
def test_actions_on_a_missing_cluster_say_so(action, capsys):
    args = _parser().parse_args(["cluster", action, "--name", "doesnotexist"])
    rc = args.func(args)
    assert "no local cluster named 'doesnotexist'" in capsys.readouterr().out
    assert rc == (0 if action == "down" else 1)


class _Recorder:
    """Stands in for LocalCluster in `start`: records the slot of each config; ``taken``: slots another
    `cluster up` records first (SlotTaken before anything starts)."""

    slots: list[int] = []
    taken: set[int] = set()

    def __init__(self, cfg, progress=None) -> None:
        self.cfg = cfg

    def up(self):
        from conformance_lab.local.state import SlotTaken

        _Recorder.slots.append(self.cfg.slot)
        if self.cfg.slot in _Recorder.taken:
            _Recorder.taken.discard(self.cfg.slot)
            raise SlotTaken(f"slot {self.cfg.slot} is already recorded by local cluster 'other'")
        return self.cfg.slot


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    import conformance_lab.local as local
    from conformance_lab.local import state as statelib

    monkeypatch.setattr(statelib, "STATE_ROOT", tmp_path)
    monkeypatch.setattr(local, "LocalCluster", _Recorder)
    _Recorder.slots, _Recorder.taken = [], set()
    return statelib


def test_up_without_slot_takes_the_lowest_free_one(recorder):
    """A second `cluster up` (no --slot) while another cluster records slot 0 starts in slot 1, not with
    "slot 0 is already recorded" (issue 27 §1); --slot still wins when given."""
    recorder.ClusterState(name="first", slot=0, nodes=1, log_dir="/tmp").save()
    recorder.ClusterState(name="mine", slot=0, nodes=1, log_dir="/tmp").save()  # a stale record of its own name
    args = _parser().parse_args(["cluster", "up", "--name", "mine"])
    assert args.slot is None and cli.start(args, progress=lambda _l: None) == 1
    assert cli.start(_parser().parse_args(["cluster", "up", "--slot", "4"]), progress=lambda _l: None) == 4


def test_up_moves_on_when_another_up_records_the_slot_first(recorder):
    """Two `cluster up` choosing the same free slot at once: the later one gets SlotTaken and tries the next."""
    recorder.ClusterState(name="first", slot=0, nodes=1, log_dir="/tmp").save()
    _Recorder.taken = {1}
    seen: list[str] = []

    def progress(line: str) -> None:
        seen.append(line)
        if "already recorded" in line:  # the racing cluster's record lands with its SlotTaken
            recorder.ClusterState(name="other", slot=1, nodes=1, log_dir="/tmp").save()

    assert cli.start(_parser().parse_args(["cluster", "up"]), progress=progress) == 2
    assert _Recorder.slots == [1, 2] and any("choosing another slot" in line for line in seen), seen
