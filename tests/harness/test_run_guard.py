"""What ``dra-conformance run`` refuses before pytest starts and the pytest configuration it runs under (breaker
s15 C1, C3, C4): no reruns, no report directory holding an earlier run's results, only its own ini file (an ini
above the install or in the working directory never applies), and a report directory it did not create is never
removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.runner import narrowing, run_guard

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "conformance.cli"]
# builds `run`'s pytest command line in a driver repository whose pytest.ini deselects everything, and prints
# the ini file pytest read and the addopts/-k it applied (collect only: no cluster)
PROBE = """
import os, sys
from pathlib import Path
import pytest
from conformance import cli
from conformance.runner import cli as runner_cli, run_guard
os.chdir(sys.argv[1])
ns = cli.build_parser().parse_args(["run", "--workers", "0", "--", sys.argv[2], "--collect-only", "-q"])
built = runner_cli.build_pytest_args(ns, "r1", Path(sys.argv[1]) / "report")
if sys.argv[3] == "without-c":  # the control: what pytest reads without the run's own ini
    built = [a for a in built if a not in run_guard.ini_args()[:2]]
class Spy:
    def pytest_configure(self, config):
        print("SPY", {"ini": str(config.inipath), "addopts": config.getini("addopts"), "k": config.option.keyword})
pytest.main(built, plugins=[Spy()])
"""


def _spy(tmp_path: Path, mode: str) -> dict:
    repo = tmp_path / "driver-repo"
    (repo / "tests").mkdir(parents=True, exist_ok=True)
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -k nothing_matches_this\n")
    (repo / "tests" / "test_probe.py").write_text("def test_probe():\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo), str(repo / "tests" / "test_probe.py"), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("SPY ")), None)
    assert line, proc.stdout + proc.stderr
    return eval(line[4:])  # noqa: S307 - our own probe's dict repr


def test_an_ini_file_of_the_driver_repository_never_applies_to_the_run(tmp_path):
    """C3: the control (no -c) reads the repository's pytest.ini and its ``-k``; the run reads only its own."""
    control = _spy(tmp_path, "without-c")
    assert control["ini"] == str(tmp_path / "driver-repo" / "pytest.ini") and control["k"] == "nothing_matches_this"
    own = _spy(tmp_path, "with-c")
    assert own == {"ini": str(run_guard.OWN_INI), "addopts": ["-ra", "--strict-markers"], "k": ""}, own


def test_the_own_ini_is_shipped_and_is_no_narrowing():
    assert run_guard.OWN_INI.is_file() and run_guard.OWN_INI == narrowing.OWN_INI
    args = run_guard.ini_args()
    assert args[:2] == ["-c", str(run_guard.OWN_INI)] and "no:rerunfailures" in args
    assert narrowing.arguments({"inifilename": str(run_guard.OWN_INI)}, [])["select"] == []
    other = narrowing.arguments({"inifilename": "/elsewhere/pytest.ini"}, [])["select"]
    assert other == ["-c", "/elsewhere/pytest.ini"]


@pytest.mark.parametrize(
    "extra, refused",
    [
        (["--reruns", "2"], "--reruns"),
        (["-k", "x", "--reruns=3"], "--reruns=3"),
        (["--reruns-delay", "1"], "--reruns-delay"),
        (["--only-rerun", "AssertionError"], "--only-rerun"),
        (["-p", "rerunfailures"], "-p rerunfailures"),
        (["-ppytest_rerunfailures"], "-p pytest_rerunfailures"),
        (["-k", "reruns", "-p", "xdist"], None),
    ],
)
def test_reruns_are_refused(extra, refused):
    assert run_guard.refused_option(["--", *extra]) == refused


def test_a_report_dir_of_an_earlier_run_is_refused(tmp_path):
    assert run_guard.stale_report_dir(tmp_path / "new") is None
    (tmp_path / "empty" / "allure-results").mkdir(parents=True)
    assert run_guard.stale_report_dir(tmp_path / "empty") is None
    old = tmp_path / "old"
    (old / "allure-results").mkdir(parents=True)
    (old / "allure-results" / "a-result.json").write_text("{}")
    (old / "run.json").write_text("{}")
    why = run_guard.stale_report_dir(old)
    assert why and str(old) in why and "allure-results/, run.json" in why
    assert f"use a subdirectory, e.g. --report-dir {old / 'conformance'}" in why and "remove" not in why, why


def test_a_ci_workspace_with_a_junit_xml_is_no_earlier_run(tmp_path):
    """Breaker s15 D9: a workspace holding a unit-test step's junit.xml (and an empty allure-results/) takes the
    run; a summary.json alone, or a non-empty allure-results/ alone, is an earlier run's."""
    ws = tmp_path / "ws"
    (ws / "allure-results").mkdir(parents=True)
    (ws / "junit.xml").write_text("<testsuites/>")
    assert run_guard.stale_report_dir(ws) is None
    (ws / "summary.json").write_text("{}")
    assert "(summary.json)" in (run_guard.stale_report_dir(ws) or "")
    (ws / "summary.json").unlink()
    (ws / "allure-results" / "x-container.json").write_text("{}")
    assert "(allure-results/)" in (run_guard.stale_report_dir(ws) or "")


@pytest.mark.parametrize(
    "addopts, refused",
    [
        ("--reruns 2", "PYTEST_ADDOPTS holds --reruns: "),
        ("-x --reruns=1 --reruns-delay 3", "PYTEST_ADDOPTS holds --reruns=1: "),
        ("-p pytest_rerunfailures", "PYTEST_ADDOPTS holds -p pytest_rerunfailures: "),
        ("-k 'reruns and not x' -p no:rerunfailures", None),
        ("-k 'unbalanced", None),  # pytest reports the quoting itself
        ("", None),
    ],
)
def test_a_rerun_option_in_pytest_addopts_is_refused_naming_the_variable(tmp_path, addopts, refused):
    """Breaker s15 D4: an inherited ``PYTEST_ADDOPTS=--reruns 2`` ended in pytest's bare "unrecognized
    arguments"; it is refused before pytest starts, naming PYTEST_ADDOPTS in the error and the fix."""
    why = run_guard.refusal([], tmp_path / "new", {"PYTEST_ADDOPTS": addopts})
    if refused is None:
        assert why is None
        return
    assert why and why.startswith(refused) and "fix: drop the option from PYTEST_ADDOPTS" in why, why
    typed = run_guard.refusal(["--only-rerun", "E"], tmp_path / "new", {"PYTEST_ADDOPTS": addopts})
    assert typed and typed.startswith("--only-rerun: a qualification run does not retry"), typed  # typed first


def _run(tmp_path: Path, report: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [*CLI, "run", "--cluster", "existing", "--kubeconfig", str(tmp_path / "none.kc"), "--no-report"]
    return subprocess.run(
        [*cmd, "--report-dir", str(report), *extra], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )


def test_run_refuses_reruns_and_a_used_report_dir_with_exit_4_before_anything_starts(tmp_path):
    proc = _run(tmp_path, tmp_path / "r", "--", "--reruns", "2")
    assert proc.returncode == 4 and "error: --reruns: a qualification run does not retry" in proc.stderr, proc.stderr
    assert not (tmp_path / "r").exists()
    used = tmp_path / "used"
    (used / "allure-results").mkdir(parents=True)
    (used / "allure-results" / "x-result.json").write_text(json.dumps({"status": "passed"}))
    proc = _run(tmp_path, used)
    assert proc.returncode == 4 and f"--report-dir {used} already holds" in proc.stderr, proc.stderr
    assert sorted(p.name for p in used.rglob("*")) == ["allure-results", "x-result.json"]  # untouched
    env = {**os.environ, "PYTEST_ADDOPTS": "--reruns 2"}  # D4: a CI's inherited option, before pytest starts
    proc = _run(tmp_path, tmp_path / "r2", env=env)
    assert proc.returncode == 4 and "error: PYTEST_ADDOPTS holds --reruns: a qualification" in proc.stderr, proc.stderr
    assert "unrecognized arguments" not in proc.stdout + proc.stderr and not (tmp_path / "r2").exists()


def test_a_report_dir_the_run_did_not_create_is_left(tmp_path):
    """C4: a refused run (a missing kubeconfig: exit 4) leaves an empty --report-dir that existed before (a
    mount point cannot be removed; the user made it), and removes one it created."""
    mine = tmp_path / "mine"
    mine.mkdir()
    proc = _run(tmp_path, mine)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert mine.is_dir()
    run_guard.drop_if_empty(tmp_path / "created", existed=False, default_parent=False)  # absent: nothing to do
    (tmp_path / "created" / "sub").mkdir(parents=True)
    run_guard.drop_if_empty(tmp_path / "created", existed=False, default_parent=False)
    assert not (tmp_path / "created").exists()


def test_a_report_dir_that_cannot_be_removed_is_a_note_not_a_crash(tmp_path, monkeypatch, capsys):
    """C4: EBUSY (an empty mount point) from the removal is a note on stderr."""
    busy = tmp_path / "busy"
    busy.mkdir()

    def ebusy(path, *a, **k):
        raise OSError(16, "Device or resource busy", str(path))

    monkeypatch.setattr(run_guard.shutil, "rmtree", ebusy)
    run_guard.drop_if_empty(busy, existed=False, default_parent=True)
    assert busy.is_dir() and "left the empty report directory" in capsys.readouterr().err


def test_a_report_dir_that_is_a_file_under_a_file_or_uncreatable_is_refused_leaving_nothing(tmp_path, monkeypatch):
    """s16 new-user F3: each was an INTERNALERROR in the report plugin's mkdir, read as exit 3."""
    afile = tmp_path / "afile"
    afile.write_text("hi")
    said = run_guard.unusable_report_dir(afile)
    assert said.startswith(f"--report-dir {afile}: exists and is not a directory") and "fix: give a directory" in said
    said = run_guard.unusable_report_dir(afile / "sub" / "deeper")
    assert said.startswith(f"--report-dir {afile / 'sub' / 'deeper'}: {afile} is a file, not a directory"), said
    real_mkdir = Path.mkdir

    def refuse_leaf(self, *a, **k):  # the parent is made, the leaf refused (EACCES, EROFS, /proc)
        if self.name == "leaf":
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *a, **k)

    monkeypatch.setattr(Path, "mkdir", refuse_leaf)
    said = run_guard.unusable_report_dir(tmp_path / "new" / "leaf")
    assert said == (
        f"--report-dir {tmp_path / 'new' / 'leaf'}: cannot be created (Permission denied); fix: give a directory "
        "you can write (or leave --report-dir out: reports/<run-id>)"
    )
    assert not (tmp_path / "new").exists()  # the parent made to find out is removed again
    monkeypatch.undo()
    assert run_guard.unusable_report_dir(tmp_path / "ok" / "run") is None and not (tmp_path / "ok").exists()
    assert run_guard.unusable_report_dir(tmp_path) is None
    said = run_guard.refusal([], tmp_path / "afile" / "r", given=False)
    assert said.startswith(f"the report directory {afile / 'r'} (the default)") and "pass --report-dir DIR" in said


def test_run_refuses_a_report_dir_under_a_file_with_exit_4_before_pytest(tmp_path):
    (tmp_path / "afile").write_text("hi")
    for report in (tmp_path / "afile", tmp_path / "afile" / "sub"):
        proc = _run(tmp_path, report)
        assert proc.returncode == 4 and f"error: --report-dir {report}: " in proc.stderr, proc.stderr
        assert "INTERNALERROR" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
