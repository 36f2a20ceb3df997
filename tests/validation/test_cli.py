"""`dra-conformance validate-suite` orchestration without a cluster: child runs replaced by canned results;
progress lines, exit codes (0 pass, 1 matrix failed, 2 Ctrl-C with a partial report, 4 bad faults file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conformance_tools.validation import runs
from conformance_tools.validation.verdict import RunResult

from conformance import cli

SMOKE = "suites/smoke/test_smoke.py"
SEES = f"{SMOKE}::test_pod_with_claim_runs_and_sees_its_device"
PUBLISHES = f"{SMOKE}::test_driver_publishes_devices_on_every_node"


def _file(tmp_path: Path, faults=("prepare-error", "skip-cdi-env"), **over) -> Path:
    from conformance_tools.validation import faultfile

    known = faultfile.known_faults()
    entries = {
        n: {"class": n, "symptom": "kubelet could not prepare", "select": [SMOKE], "expect": [SEES]} for n in known
    }
    entries.update(over)
    path = tmp_path / "faults.yaml"
    path.write_text(json.dumps({"version": 1, "faults": entries}))
    return path


@pytest.fixture
def fake_runs(monkeypatch):
    """Replace child runs: ``outcome[label]`` -> tests dict (or an exception to raise)."""
    outcome: dict = {}
    seen: list[str] = []

    def execute(plan, common=(), **_kw):
        seen.append(plan.label)
        got = outcome.get(plan.label, {SEES: "failed", PUBLISHES: "passed"})
        if isinstance(got, BaseException):
            raise got
        failed = {n: outcome.get("message", "WaitFailed: kubelet could not prepare the pod's claims") for n in got}
        code = 0 if plan.label == "healthy" else 1
        return RunResult(plan.label, code, got, 5.0, messages=failed, report_dir=str(plan.report_dir))

    monkeypatch.setattr(runs, "execute", execute)
    outcome["healthy"] = {SEES: "passed", PUBLISHES: "passed"}
    return outcome, seen


def _main(tmp_path, faults_file, faults="prepare-error,skip-cdi-env") -> int:
    argv = ["validate-suite", "--faults-file", str(faults_file), "--faults", faults, "--no-html"]
    return cli.main([*argv, "--report-dir", str(tmp_path / "m")])


def test_all_caught_passes_with_progress_per_fault(tmp_path, fake_runs, capsys):
    _outcome, seen = fake_runs
    assert _main(tmp_path, _file(tmp_path)) == 0
    out = capsys.readouterr().out
    assert seen == ["healthy", "prepare-error", "skip-cdi-env"]
    assert "fault 1/2 prepare-error: caught by 1 expected test(s) in 5s" in out
    assert "VALIDATE-SUITE: PASS - 2/2 fault(s) caught with their symptom (100%)" in out
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["verdict"] == "PASS"


def test_failure_without_the_symptom_is_caught_by_accident_and_fails_the_matrix(tmp_path, fake_runs, capsys):
    outcome, _seen = fake_runs
    outcome["message"] = "conformance.core.errors.WaitTimeout: timed out after 150s waiting for pod x Running"
    assert _main(tmp_path, _file(tmp_path), faults="prepare-error") == 1
    out = capsys.readouterr().out
    assert "fault 1/1 prepare-error: CAUGHT BY ACCIDENT: 1 expected test(s) failed without the symptom" in out
    assert f"fault prepare-error: caught by accident (does not count): {SEES}: timeout: " in out
    assert "VALIDATE-SUITE: FAIL - 0/1 fault(s) caught with their symptom (0%)" in out
    doc = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert (
        doc["faults"][0]["status"] == "caught-by-accident" and doc["faults"][0]["cells"][SEES] == "caught-by-accident"
    )
    assert "**by accident**" in (tmp_path / "m" / "summary.md").read_text()


def test_missed_fault_fails_naming_it(tmp_path, fake_runs, capsys):
    outcome, _seen = fake_runs
    outcome["skip-cdi-env"] = {SEES: "passed", PUBLISHES: "passed"}
    assert _main(tmp_path, _file(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "fault 2/2 skip-cdi-env: MISSED" in out and "fault skip-cdi-env: caught by no test" in out


def test_ctrl_c_writes_a_partial_report_and_exits_2(tmp_path, fake_runs, capsys):
    outcome, seen = fake_runs
    stopped = RunResult("prepare-error", 2, {}, 3.0, note="interrupted", report_dir=str(tmp_path / "m/runs/x"))
    outcome["prepare-error"] = runs.Interrupted(stopped)
    assert _main(tmp_path, _file(tmp_path)) == 2
    assert seen == ["healthy", "prepare-error"]
    doc = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert doc["verdict"] == "INTERRUPTED" and doc["options"]["interrupted"] is True and doc["faults"] == []
    assert "interrupted during prepare-error (interrupted)" in capsys.readouterr().out


def test_bad_faults_file_exits_4_naming_the_entry(tmp_path, fake_runs, capsys):
    entry = {"class": "x", "symptom": "x", "select": [SMOKE], "expect": [SEES], "expected": []}
    path = _file(tmp_path, **{"prepare-error": entry})
    assert _main(tmp_path, path) == 4
    err = capsys.readouterr().err
    assert "faults.prepare-error: unknown key 'expected'" in err and fake_runs[1] == []


def test_check_and_dry_run_start_nothing(tmp_path, fake_runs, capsys):
    path = _file(tmp_path)
    assert cli.main(["validate-suite", "--faults-file", str(path), "--check"]) == 0
    assert cli.main(["validate-suite", "--faults-file", str(path), "--faults", "skip-cdi-env", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "DRA_REFERENCE_FAULTS=skip-cdi-env " in out and "DRA_REFERENCE_FAULTS= " in out and fake_runs[1] == []


def test_workers_run_every_child_in_device_shards(tmp_path, fake_runs, capsys):
    """``--workers N`` (``make validate-suite-sharded``) comes after the command's own ``--workers 0``: the last
    value wins in ``dra-conformance run``; without it the children stay serial."""
    path = _file(tmp_path)
    argv = ["validate-suite", "--faults-file", str(path), "--faults", "skip-cdi-env", "--dry-run"]
    assert cli.main([*argv, "--workers", "3"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("DRA_REFERENCE_FAULTS")]
    assert len(lines) == 2 and all(" --workers 0 " in line and " --workers 3 " in line for line in lines)
    assert all(line.index("--workers 3") < line.index(" -- ") for line in lines), lines
    assert cli.main(argv) == 0
    assert "--workers 3" not in capsys.readouterr().out


def test_check_refuses_a_bad_driver_profile_of_the_child_runs(tmp_path, fake_runs, monkeypatch, capsys):
    bad = tmp_path / "reference.yaml"
    (tmp_path / "c").mkdir()  # the relative chart exists (profiles.check_file); upgrade_from is what is bad
    bad.write_text(
        json.dumps(
            {
                "name": "reference",
                "driver": "gpu.example.com",
                "device_classes": ["gpu.example.com"],
                "visibility": {"env_regex": "^X="},
                "deploy": {"mode": "bundled"},
                "deploy_alternatives": {"helm": {"chart": "c/", "upgrade_from": {"chart": "old/"}}},
            }
        )
    )
    monkeypatch.setattr(runs, "DRIVER", str(bad))
    assert cli.main(["validate-suite", "--faults-file", str(_file(tmp_path)), "--check"]) == 4
    err = capsys.readouterr().err
    assert f"{bad}: deploy_alternatives.helm.upgrade_from: upgrade_from must be a mapping with a name" in err
    assert fake_runs[1] == []


def test_healthy_of_covers_the_union_of_other_faults_once(tmp_path, fake_runs, capsys):
    """A matrix run in batches: one batch's healthy run covers every batch's selections (--healthy-of), the
    others run --no-healthy; the healthy plans come from the --healthy-of faults, the fault runs from --faults."""
    other = "suites/node/test_prepare.py"
    cdi = f"{other}::test_cdi_spec_exists_while_prepared_and_is_removed_after"
    path = _file(tmp_path, **{"skip-cdi-env": {"class": "c", "symptom": "s", "select": [other], "expect": [cdi]}})
    argv = ["validate-suite", "--faults-file", str(path), "--faults", "prepare-error", "--dry-run"]
    assert cli.main([*argv, "--healthy-of", "prepare-error,skip-cdi-env"]) == 0
    healthy = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{runs.FAULTS_ENV}= ")]
    assert len(healthy) == 1 and healthy[0].endswith(f"-- {other} {SMOKE}"), healthy
    _outcome, seen = fake_runs
    assert _main(tmp_path, path, faults="prepare-error") == 0  # no --healthy-of: the batch's own union
    assert seen == ["healthy", "prepare-error"]
    doc = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert doc["options"]["healthyOf"] == ["prepare-error"]
    assert cli.main([*argv, "--healthy-of", "skip-cdi-env", "--no-healthy"]) == 4
    assert "--healthy-of with --no-healthy" in capsys.readouterr().err


def test_a_report_dir_holding_an_earlier_matrix_is_refused(tmp_path, fake_runs, capsys):
    """breaker s15 D5: a child run into a used dir exits 4 before any test, and the earlier run's allure-results
    there would be read as this matrix's catches: refused before anything runs (exit 4, naming dir and fix)."""
    _outcome, seen = fake_runs
    (tmp_path / "m" / "runs" / "prepare-error" / "allure-results").mkdir(parents=True)
    assert _main(tmp_path, _file(tmp_path)) == 4
    err = capsys.readouterr().err
    assert "holds an earlier matrix's runs" in err and "give a new --report-dir" in err, err
    assert seen == []
