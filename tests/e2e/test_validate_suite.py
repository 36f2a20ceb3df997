"""A bounded slice of the fault-detection matrix, as `make validate-suite FAULTS=...` runs it: three cheap faults
of the reference driver, each on its own local cluster, must each make their fixtures/faults.yaml tests fail,
the healthy driver must pass the union of their selections, and the report must carry the matrix
(summary.json, summary.md, Allure). The whole matrix is `make validate-suite`. Source: issue 11 "Fault matrix"
and acceptance ("make test runs a bounded slice of the matrix"); design.md §11.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
FAULTS = ("prepare-error", "skip-cdi-env", "ignore-claim-config")  # in fixtures/faults.yaml order


@pytest.fixture(scope="module")
def matrix(local_cluster, tmp_path_factory):
    """(exit code, output, matrix dir) of one validate-suite run over :data:`FAULTS`. Its clusters start after the
    shared one (``local_cluster``), which then keeps the host's kube-proxy when tests run on xdist workers."""
    report = tmp_path_factory.mktemp("validate-suite") / "matrix"
    cmd = [sys.executable, "-m", "conformance.cli", "validate-suite", "--faults", ",".join(FAULTS)]
    proc = subprocess.run([*cmd, "--report-dir", str(report)], cwd=REPO, capture_output=True, text=True, timeout=2400)
    return proc.returncode, proc.stdout + proc.stderr, report


def test_each_fault_is_caught_and_the_healthy_driver_passes(matrix):
    code, out, report = matrix
    doc = json.loads((report / "summary.json").read_text())
    assert code == 0 and doc["verdict"] == "PASS", (doc["verdictReasons"], out[-4000:])
    assert [f["name"] for f in doc["faults"]] == list(FAULTS)
    for fault in doc["faults"]:
        assert fault["status"] == "caught" and fault["caughtBy"] and not fault["missed"], fault
        assert fault["durationS"] > 0 and fault["reportDir"].startswith(str(report / "runs")), fault
    (healthy,) = doc["healthy"]
    assert healthy["exitCode"] == 0 and not healthy["failures"] and healthy["counts"].get("passed", 0) >= 5, healthy
    assert doc["detection"] == {"faults": 3, "caught": 3, "rate": 1.0, "notCaught": []}
    for fault in FAULTS:
        assert f"fault {FAULTS.index(fault) + 1}/3 {fault}: caught by" in out, out[-4000:]
    assert "VALIDATE-SUITE: PASS - 3/3 fault(s) caught (100%)" in out


def test_report_carries_the_matrix_in_markdown_and_allure(matrix):
    _code, out, report = matrix
    doc = json.loads((report / "summary.json").read_text())
    text = (report / "summary.md").read_text()
    assert "## Detection matrix (fault x test)" in text and "Detection rate: 3/3 faults caught (100%)" in text, text
    for fault in doc["faults"]:
        assert all(doc["tests"].index(t) >= 0 and fault["cells"][t] == "caught" for t in fault["caughtBy"])
        assert f"| {fault['name']} | " in text
    results = [json.loads(p.read_text()) for p in (report / "allure-results").glob("*-result.json")]
    assert sorted(r["name"] for r in results) == sorted(
        [f"fault {f} is detected" for f in FAULTS] + ["healthy driver passes (healthy)"]
    )
    assert all(r["status"] == "passed" for r in results), [(r["name"], r["status"]) for r in results]
    assert (report / "allure-report" / "index.html").is_file(), out[-2000:]
    for run in [*FAULTS, "healthy"]:
        assert (report / "runs" / run / "summary.md").is_file() and (report / "runs" / run / "run.log").is_file()
