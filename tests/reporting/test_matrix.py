"""The multi-version matrix: one cell per Kubernetes version, merged into one report."""

from __future__ import annotations

import json
import sys

import pytest
from conformance_tools import matrix as matrix_runner

from conformance.reporting import browser, junit, matrix, results

RUNNER = f"{sys.executable} -m tests.reporting.fake_runner"


def test_matrix_merges_versions_into_one_report(tmp_path, monkeypatch):
    monkeypatch.chdir(__import__("tests.reporting.conftest", fromlist=["REPO"]).REPO)
    code = matrix_runner.main(
        [
            "--versions",
            "1.34",
            "1.36",
            "--reports-root",
            str(tmp_path),
            "--matrix-id",
            "m",
            "--runner",
            RUNNER,
            "--",
            "--fail-versions",
            "1.36",
        ]
    )
    mdir = tmp_path / "m"
    assert code == 1
    data = json.loads((mdir / "matrix.json").read_text())
    assert [c["verdict"] for c in data["cells"]] == ["PASS", "FAIL"]
    shared = data["capabilities"]["driver.shared_claims"]
    assert {v: (c["status"], c["declared"], c["gate"]) for v, c in shared.items()} == {
        "1.34": ("pass", False, None),
        "1.36": ("fail", False, None),
    }
    assert shared["1.34"]["reasons"] == [] and shared["1.36"]["reasons"]
    assert "| driver.shared_claims | pass | fail: " in (mdir / "matrix.md").read_text()
    records = results.load(mdir / "allure-results")
    assert len(records) == 8 and not any(r.retries for r in records)  # same tests, two versions, no retries
    assert {r.parameters["Kubernetes"] for r in records} == {"1.34", "1.36"}
    names = [(c, n) for c, n, _ in junit.cases(mdir / "junit.xml")]
    assert len(names) == len(set(names)) == 8
    assert (tmp_path / "latest").resolve() == mdir.resolve()
    assert not (mdir / "latest").exists()  # cells do not get their own latest link
    with browser.serve(mdir / "allure-report") as url:
        text = browser.visible_text(browser.dump_dom(url + "index.html"))
    assert 'Environment: "Kubernetes 1.34"' in text and 'Environment: "Kubernetes 1.36"' in text, text[:1500]


def test_matrix_rejects_bad_versions(capsys):
    with pytest.raises(SystemExit) as exc:
        matrix_runner.main(["--versions", "v1.35", "--", "--profile", "core"])
    assert exc.value.code == 2 and "expected Kubernetes minors" in capsys.readouterr().err


def test_matrix_dry_run_prints_one_command_per_version(tmp_path, capsys):
    assert (
        matrix_runner.main(
            [
                "--versions",
                "1.34",
                "1.35",
                "--reports-root",
                str(tmp_path),
                "--matrix-id",
                "x",
                "--runner",
                "dra-conformance run",
                "--dry-run",
                "--",
                "--profile",
                "core",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"dra-conformance run --k8s-version {v} --report-dir {tmp_path}/x/{v} --profile core" for v in ("1.34", "1.35")
    ]


def _stage(stage, default, enabled):
    return {"stage": stage, "default": default, "enabled": enabled}


def test_matrix_table_shows_gate_stages_and_skip_reasons():
    summaries = {
        v: {
            "verdict": "PASS",
            "verdictReasons": [],
            "environment": {"kubernetesVersion": f"v{v}.0"},
            "driver": {"name": "d"},
            "counts": {"executed": 1, "passed": 1},
            "featureGatesMode": mode,
            "capabilities": [
                {
                    "name": "driver.partitions",
                    "status": status,
                    "reasons": reasons,
                    "evidence": "e",
                    "declared": True,
                }
            ],
        }
        for v, mode, status, reasons in (
            ("1.34", "defaults", "skip", ["suites/p.py::t: declares partitions but the cluster lacks it: gate off"]),
            ("1.37", "all", "pass", []),
        )
    }
    runs = {
        "1.34": {"feature_gate_stages": {"DRAPartitionableDevices": _stage("ALPHA", False, False)}},
        "1.37": {
            "feature_gate_stages": {
                "DRAPartitionableDevices": _stage("BETA", True, True),
                "DRADeviceTaintRules": _stage("GA", True, True),
                "DRAWorkloadResourceClaims": _stage("BETA", False, True),
            }
        },
    }
    data = matrix.table(["1.34", "1.37"], summaries, {"1.34": {"command": "run --k8s-version 1.34"}}, runs)
    assert data["featureGates"]["DRADeviceTaintRules"] == {
        "1.34": {"stage": "absent", "enabled": False},
        "1.37": {"stage": "GA", "enabled": True},
    }
    part = data["capabilities"]["driver.partitions"]
    assert (part["1.34"]["gate"], part["1.34"]["gateStage"], part["1.37"]["gateStage"]) == (
        "DRAPartitionableDevices",
        "alpha",
        "beta-on",
    )
    text = matrix.render(data)
    assert "| DRAWorkloadResourceClaims | absent | beta-off+ |" in text
    assert "| DRAPartitionableDevices | alpha | beta-on |" in text
    assert (
        "| driver.partitions | skip: declares partitions but the cluster lacks it: gate off "
        "[DRAPartitionableDevices: alpha] | pass [DRAPartitionableDevices: beta-on] |"
    ) in text
    assert "- 1.34: `run --k8s-version 1.34`" in text
    assert matrix.gate_stage(None) == "absent" and matrix.gate_stage(_stage("BETA", None, True)) == "beta"


def test_the_matrix_subcommand_takes_its_options_and_the_run_arguments_after_the_separator(capsys, tmp_path):
    from conformance import cli

    code = cli.main(
        ["matrix", "--versions", "1.34", "1.35", "--reports-root", str(tmp_path), "--dry-run"]
        + ["--"]
        + ["--driver", "reference", "--profile", "core"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 2, lines
    assert all(line.endswith("--driver reference --profile core") for line in lines)
    assert "--k8s-version 1.34" in lines[0] and "--k8s-version 1.35" in lines[1]
