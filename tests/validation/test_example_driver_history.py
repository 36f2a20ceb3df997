"""`dra-conformance example-driver-history` without a cluster: the pinned releases in version order, each
release's profile (its own chart and image, no upgrade lane), the fixes file explaining failures by test and
release, and the table (an unexplained failure is shown as such)."""

from __future__ import annotations

import json

import yaml
from conformance_lab.toolchain import versions
from conformance_tools import history
from conformance_tools.validation.verdict import RunResult

from conformance.drivers import profiles


def test_every_pinned_release_is_in_the_history_oldest_first():
    pinned = history.releases(versions.load().go_tools)
    assert [r.version for r in pinned] == ["v0.1.0", "v0.2.0", "v0.2.1", "v0.3.0", "v0.4.0"]
    assert {r.tool for r in pinned} >= {"dra-example-driver", "dra-example-driver-previous"}


def test_a_release_profile_deploys_that_release_alone_and_loads(tmp_path):
    base = yaml.safe_load(history.BASE_PROFILE.read_text())
    rel = history.Release("dra-example-driver-v0.2.1", "v0.2.1")
    prof = history.release_profile(base, rel)
    assert prof["deploy"]["chart"] == {"go_module": "dra-example-driver-v0.2.1", "path": history.CHART}
    assert prof["deploy"]["images"] == ["dra-example-driver-v0.2.1"]
    assert "upgrade_from" not in prof["deploy"] and "deploy_alternatives" not in prof
    assert base["deploy"]["upgrade_from"], "the base profile is not changed"
    assert prof["name"] == "dra-example-driver-v0.2.1"
    path = tmp_path / "dra-example-driver-v0.2.1.yaml"
    path.write_text(yaml.safe_dump(prof))
    assert profiles.load(str(path)).driver == "gpu.example.com"


def test_the_fixes_file_loads_and_names_pinned_releases():
    pinned = {r.version for r in history.releases(versions.load().go_tools)}
    fixes = history.load_fixes()
    assert fixes
    for fix in fixes:
        assert set(fix.versions) <= pinned and fix.change and (not fix.fixed_in or fix.fixed_in in pinned)


def _result(tests, messages, tmp_path, code=1):
    (tmp_path / "run.log").write_text("...\nVERDICT: FAIL (2 failed)\n")
    return RunResult("v9", code, tests, 10.0, messages, report_dir=str(tmp_path))


def test_the_table_names_the_fix_of_each_failure_and_marks_the_rest_unexplained(tmp_path):
    fixes = [history.Fix(("test_a.py::test_x",), ("v0.1.0",), "v0.2.0", "abc123 Fix x", "")]
    rel = history.Release("t", "v0.1.0")
    tests = {"suites/test_a.py::test_x": "failed", "suites/test_b.py::test_y": "broken", "s::z": "passed"}
    row = history.row_of(rel, _result(tests, {"suites/test_a.py::test_x": "boom | x"}, tmp_path))
    assert row.verdict == "FAIL (2 failed)" and row.counts == {"failed": 1, "broken": 1, "passed": 1}
    table = history.render([row], fixes)
    assert "| v0.1.0 | FAIL (2 failed) | 1/2/0 | suites/test_a.py::test_x (boom / x) | v0.2.0: abc123 Fix x |" in table
    assert "suites/test_b.py::test_y () | unexplained |" in table
    assert history.explain("suites/test_a.py::test_x", "v0.2.0", fixes) is None  # seen on v0.1.0 only


def test_a_release_refused_before_any_test_shows_its_install_failure(tmp_path):
    tests = {history.runs.SETUP_RESULT: "broken"}
    msg = {history.runs.SETUP_RESULT: "DriverNotReady: helm: chart requires kubeVersion 1.32.x"}
    (tmp_path / "run.log").write_text("dra-conformance: ERROR\n")
    row = history.row_of(history.Release("t", "v0.1.0"), RunResult("v", 3, tests, 1.0, msg, report_dir=str(tmp_path)))
    assert row.failures == {"install": msg[history.runs.SETUP_RESULT]}
    assert row.verdict == "ERROR (cluster or driver not usable)"
    fixes = [history.Fix(("install",), ("v0.1.0",), "v0.2.0", "b163298 x")]
    assert "| v0.2.0: b163298 x |" in history.render([row], fixes)


def test_outcomes_of_separate_runs_add_up_to_one_table_oldest_first(tmp_path):
    pinned = [history.Release("a", "v0.1.0"), history.Release("b", "v0.2.0"), history.Release("c", "v0.3.0")]
    for rel, verdict in ((pinned[2], "PASS"), (pinned[0], "FAIL")):
        (tmp_path / rel.version).mkdir()
        row = {"verdict": verdict, "failures": {}, "counts": {"passed": 3}, "report_dir": "x"}
        (tmp_path / rel.version / history.ROW_FILE).write_text(json.dumps(row))
    rows = history.load_rows(tmp_path, pinned)
    assert [(r.release.version, r.verdict) for r in rows] == [("v0.1.0", "FAIL"), ("v0.3.0", "PASS")]
    assert "| v0.3.0 | PASS | 3/0/0 | none | - |" in history.render(rows, [])
