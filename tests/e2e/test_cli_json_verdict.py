"""`dra-conformance run -o json` on a real run (the shared local cluster, the reference driver preinstalled under
a fresh name): the last stdout line is the verdict as one JSON object, agreeing with the exit code and run.json,
and the run.json it leaves names no path of this machine (issue 22 §4, §5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.preinstalled import reference_driver, start_run

pytestmark = pytest.mark.e2e


def test_a_passing_run_prints_its_json_verdict_last(local_cluster, tmp_path):
    with reference_driver(local_cluster, tmp_path / "driver") as (profile, _k8s):
        report = tmp_path / "report"
        proc = start_run(local_cluster, profile, report, "-k", "test_smoke", run_args=("--workers", "0", "-o", "json"))
        out, _ = proc.communicate(timeout=600)
    verdict = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == verdict["exitCode"] == 0, out[-3000:]
    assert verdict["verdict"] == "PASS (narrowed: -k test_smoke; 2 of " + verdict["verdict"].split(" of ", 1)[1]
    assert verdict["counts"] == {"passed": 2, "failed": 0, "skipped": 0, "error": 0}
    assert verdict["driver"] == str(profile) and verdict["profile"] == "core"
    assert Path(verdict["reportDir"]).resolve() == report.resolve()
    run_json = (report / "run.json").read_text()
    assert json.loads(run_json)["run_id"] == verdict["runId"]
    assert str(tmp_path) not in run_json and str(Path.home()) not in run_json
    assert "VERDICT:" not in out
