"""The matrix report without the Allure CLI: summary.json follows its schema, summary.md carries the matrix,
one Allure result per fault and healthy run, the latest link; and a child run stopped by Ctrl-C finishes its
own cleanup before the matrix goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conformance_tools.validation import report, runs, verdict
from conformance_tools.validation.faultfile import FaultEntry
from conformance_tools.validation.verdict import RunResult

A, B = "suites/s.py::test_a", "suites/s.py::test_b"


def _data(tmp_path: Path) -> dict:
    entries = [FaultEntry("prepare-error", "prepare fails", ("suites/s.py",), (A,))]
    fault = RunResult("prepare-error", 1, {A: "failed", B: "passed"}, 61.0, {A: "WaitFailed: boom"}, "", str(tmp_path))
    healthy = RunResult("healthy", 0, {A: "passed", B: "passed"}, 50.0, report_dir=str(tmp_path))
    decided = verdict.decide(entries, {"prepare-error": fault}, [healthy], {"prepare-error": "NodePrepare errors"})
    return report.document(
        decided,
        report_id="validate-x",
        started="2026-12-01T11:00:00+00:00",
        duration_s=111.0,
        faults_file="fixtures/faults.yaml",
        kubernetesVersion="default",
    )


def test_summary_report_and_allure_results(tmp_path: Path):
    matrix_dir = tmp_path / "validate-x"
    matrix_dir.mkdir()
    data = _data(tmp_path)
    assert report.write(matrix_dir, data, html_report=False) == []
    saved = json.loads((matrix_dir / "summary.json").read_text())
    assert saved["kind"] == "fault-matrix" and saved["detection"]["rate"] == 1.0 and saved["durationS"] == 111.0
    assert saved["faults"][0]["durationS"] == 61.0 and saved["faults"][0]["caughtBy"] == [A]
    text = (matrix_dir / "summary.md").read_text()
    assert (
        "Detection rate: 1/1 faults caught with their symptom (100%)" in text and "| prepare-error | caught |\n" in text
    ), text
    results = [json.loads(p.read_text()) for p in (matrix_dir / "allure-results").glob("*-result.json")]
    assert sorted((r["name"], r["status"]) for r in results) == [
        ("fault prepare-error is detected", "passed"),
        ("healthy driver passes (healthy)", "passed"),
    ]
    assert all((matrix_dir / "allure-results" / r["attachments"][0]["source"]).is_file() for r in results)
    assert (tmp_path / "latest").resolve() == matrix_dir.resolve()


def test_stop_lets_the_child_finish_its_cleanup(tmp_path: Path):
    done = tmp_path / "cleaned"
    child = (
        "import signal, sys, time, pathlib\n"
        "def bye(*_):\n    time.sleep(1.0); pathlib.Path(sys.argv[1]).write_text('ok'); sys.exit(2)\n"
        "signal.signal(signal.SIGINT, bye)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", child, str(done)], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout.readline() == b"ready\n"
    start = time.monotonic()
    code = runs.stop(proc, progress=lambda _line: None, grace_s=20)
    assert code == 2 and done.read_text() == "ok" and time.monotonic() - start < 10
