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
