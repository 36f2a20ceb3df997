"""The parallel e2e phase's order and its makespan simulation (conformance_tools.e2e_order, issue 26 §2)."""

from __future__ import annotations

import json

import pytest
from conformance_tools import e2e_order


def test_units_keep_a_group_together_at_its_first_test():
    entries = [("a", None, 1.0), ("b", "g", 2.0), ("c", None, 3.0), ("d", "g", 4.0)]
    assert e2e_order.units(entries) == [[1.0], [2.0, 4.0], [3.0]]


def test_longest_first_beats_a_long_unit_queued_last():
    short_then_long = [[1.0]] * 6 + [[10.0]]
    assert e2e_order.makespan(short_then_long, 2) == 13.0  # the long one starts after three short ones
    assert e2e_order.makespan([[10.0]] + [[1.0]] * 6, 2) == 11.0  # one short unit waits behind it (prefetch)


def test_a_worker_holds_a_second_unit_as_xdist_hands_it_out():
    # two workers: w0 gets 10 then 1, w1 gets 1 then 1; the 5th unit goes to w1 (its pending count drops first)
    assert e2e_order.makespan([[10.0], [1.0], [1.0], [1.0], [5.0]], 2) == 11.0


def test_a_group_runs_on_one_worker():
    assert e2e_order.makespan([[3.0, 3.0, 3.0]], 3) == 9.0
    with pytest.raises(ValueError, match="workers must be >= 1"):
        e2e_order.makespan([[1.0]], 0)


def test_durations_come_from_a_log_summing_phases_and_from_junit(tmp_path):
    log = tmp_path / "ci.log"
    log.write_text("12.50s setup    tests/e2e/test_a.py::test_x\n 2.25s call     tests/e2e/test_a.py::test_x\nnoise\n")
    assert e2e_order.read_log(log) == {"tests/e2e/test_a.py::test_x": 14.75}
    junit = tmp_path / "j.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.e2e.existing.test_run" name="test_y[p]" time="7.5"/>'
        "</testsuite></testsuites>"
    )
    assert e2e_order.read_junit(junit) == {"tests/e2e/existing/test_run.py::test_y[p]": 7.5}


def test_missing_durations_fall_back_by_the_slow_mark(tmp_path):
    assert e2e_order.load(tmp_path / "absent.json") == {}
    (tmp_path / "d.json").write_text(json.dumps({"seconds": {"t": 9}}))
    seconds = e2e_order.load(tmp_path / "d.json")
    assert [e2e_order.expected(n, slow, seconds) for n, slow in [("t", False), ("u", True), ("u", False)]] == [
        9.0,
        e2e_order.SLOW_S,
        e2e_order.DEFAULT_S,
    ]


def test_checked_in_durations_name_only_collected_e2e_tests():
    seconds = e2e_order.load()
    assert seconds, f"{e2e_order.DURATIONS} is missing or empty: run `make e2e-durations` after `make test`"
    for nodeid in seconds:
        path = e2e_order.REPO / nodeid.split("::")[0]
        assert path.is_file() and nodeid.startswith("tests/e2e/"), f"{nodeid}: no such e2e test file; refresh it"


def test_outside_the_repository_simulate_and_refresh_exit_2_naming_the_missing_file(tmp_path, monkeypatch, capsys):
    """Breaker s13 B7: from a tools wheel (``REPO`` is site-packages/..) the durations are looked up in the
    current directory's repository, upwards; not found, simulate and refresh say so and exit 2 instead of pricing
    every test at the defaults (or writing under lib/)."""
    monkeypatch.setattr(e2e_order, "REPO", tmp_path / "site-packages-parent")
    repo = tmp_path / "repo"
    (repo / "tests" / "e2e").mkdir(parents=True)
    (repo / e2e_order.RELATIVE).write_text(json.dumps({"seconds": {"t": 1}}))
    (repo / "sub").mkdir()
    assert e2e_order.durations_path(repo / "sub") == repo / e2e_order.RELATIVE
    monkeypatch.chdir(tmp_path)
    assert e2e_order.main(["simulate", "--workers", "3"]) == 2
    assert f"{tmp_path / e2e_order.RELATIVE} not found" in capsys.readouterr().err
    assert e2e_order.main(["refresh", "--log", str(tmp_path / "x.log")]) == 2
    (tmp_path / "empty.json").write_text("{}")
    assert e2e_order.main(["simulate", "--durations", str(tmp_path / "empty.json")]) == 2
    assert "no durations read" in capsys.readouterr().err
