"""A bounded slice of the fault-detection matrix, as `make validate-suite FAULTS=...` runs it: three cheap faults
of the reference driver, each on its own local cluster, must each make their fixtures/faults.yaml tests fail,
the healthy driver must pass the union of their selections, and the report must carry the matrix
(summary.json, summary.md, Allure). The faults file is a copy of fixtures/faults.yaml in which the last fault's
symptom is deliberately wrong: its tests still fail, but not with that symptom, so it is reported
caught-by-accident (not caught) and the matrix fails for it alone. The whole matrix is `make validate-suite`.
Source: issue 11 "Fault matrix" and acceptance ("make test runs a bounded slice of the matrix"); issue 24 §5
(caught / caught-by-accident / missed); design.md §11.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
FAULTS = ("prepare-error", "skip-cdi-env", "ignore-claim-config")  # in fixtures/faults.yaml order
CAUGHT, ACCIDENT = FAULTS[:2], FAULTS[2]  # ACCIDENT gets a symptom its failures never show
WRONG_SYMPTOM = "a symptom no failure of this fault shows"


@pytest.fixture(scope="module")
def matrix(local_cluster, tmp_path_factory):
    """(exit code, output, matrix dir) of one validate-suite run over :data:`FAULTS`. Its clusters start after the
    shared one (``local_cluster``), which then keeps the host's kube-proxy when tests run on xdist workers."""
    folder = tmp_path_factory.mktemp("validate-suite")
    report, faults_file = folder / "matrix", folder / "faults.yaml"
    data = yaml.safe_load((REPO / "fixtures" / "faults.yaml").read_text())
    data["faults"][ACCIDENT]["symptom"] = WRONG_SYMPTOM
    faults_file.write_text(yaml.safe_dump(data, sort_keys=False))
    cmd = [sys.executable, "-m", "conformance.cli", "validate-suite", "--faults", ",".join(FAULTS)]
    cmd += ["--faults-file", str(faults_file)]
    proc = subprocess.run([*cmd, "--report-dir", str(report)], cwd=REPO, capture_output=True, text=True, timeout=2400)
    return proc.returncode, proc.stdout + proc.stderr, report


def test_each_fault_is_caught_with_its_symptom_and_the_healthy_driver_passes(matrix):
    code, out, report = matrix
    doc = json.loads((report / "summary.json").read_text())
    assert [f["name"] for f in doc["faults"]] == list(FAULTS)
    for fault in doc["faults"][:2]:
        assert fault["status"] == "caught" and fault["caughtBy"] and not fault["missed"], fault
        assert not fault["accidents"] and fault["symptom"], fault
        assert fault["durationS"] > 0 and fault["reportDir"].startswith(str(report / "runs")), fault
    (healthy,) = doc["healthy"]
    assert healthy["exitCode"] == 0 and not healthy["failures"] and healthy["counts"].get("passed", 0) >= 5, healthy
    for fault in CAUGHT:
        assert f"fault {FAULTS.index(fault) + 1}/3 {fault}: caught by" in out, out[-4000:]


def test_a_failure_without_the_symptom_is_caught_by_accident_and_fails_the_matrix(matrix):
    code, out, report = matrix
    doc = json.loads((report / "summary.json").read_text())
    (row,) = [f for f in doc["faults"] if f["name"] == ACCIDENT]
    assert row["status"] == "caught-by-accident" and not row["caughtBy"] and row["accidents"], row
    assert all(c == "caught-by-accident" for t, c in row["cells"].items() if t in row["accidents"]), row
    assert all(WRONG_SYMPTOM in why for why in row["accidents"].values()), row["accidents"]
    assert code == 1 and doc["verdict"] == "FAIL", (doc["verdictReasons"], out[-4000:])
    assert all(r.startswith(f"fault {ACCIDENT}: ") for r in doc["verdictReasons"]), doc["verdictReasons"]
    assert doc["detection"]["caught"] == 2 and doc["detection"]["notCaught"] == [ACCIDENT], doc["detection"]
    assert f"fault 3/3 {ACCIDENT}: CAUGHT BY ACCIDENT" in out, out[-4000:]
    assert "VALIDATE-SUITE: FAIL - 2/3 fault(s) caught with their symptom (67%)" in out, out[-2000:]


def test_report_carries_the_matrix_in_markdown_and_allure(matrix):
    _code, out, report = matrix
    doc = json.loads((report / "summary.json").read_text())
    text = (report / "summary.md").read_text()
    assert "## Detection matrix (fault x test)" in text and "Detection rate: 2/3 faults caught with their" in text, text
    assert "**by accident**" in text, text
    for fault in doc["faults"]:
        assert all(doc["tests"].index(t) >= 0 and fault["cells"][t] == "caught" for t in fault["caughtBy"])
        assert f"| {fault['name']} | " in text
    results = [json.loads(p.read_text()) for p in (report / "allure-results").glob("*-result.json")]
    assert sorted(r["name"] for r in results) == sorted(
        [f"fault {f} is detected" for f in FAULTS] + ["healthy driver passes (healthy)"]
    )
    statuses = {r["name"]: r["status"] for r in results}
    assert statuses.pop(f"fault {ACCIDENT} is detected") == "failed", statuses
    assert set(statuses.values()) == {"passed"}, statuses
    assert (report / "allure-report" / "index.html").is_file(), out[-2000:]
    for run in [*FAULTS, "healthy"]:
        assert (report / "runs" / run / "summary.md").is_file() and (report / "runs" / run / "run.log").is_file()
