"""A vendor's deployer, shipped as a separate plug-in (tests/plugins/vendor_deployer.py), drives a real run:
`dra-conformance run --cluster local --driver-deploy vendor-operator -- -p tests.plugins.vendor_deployer`
brings up its own local cluster, lets the plug-in deploy the reference driver, runs the smoke suite and
passes. Nothing under conformance/ names the deployer: it comes in through the registry hook
``pytest_dra_driver_deployers`` (issue 10 acceptance: "a test plug-in registers a new deployer ... and a run
uses it")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_run_uses_a_deployer_registered_by_a_plugin(tmp_path):
    report = tmp_path / "report"
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--cluster",
        "local",
        "--driver",
        "reference",
        "--driver-deploy",
        "vendor-operator",
        "--profile",
        "core",
        "--report-dir",
        str(report),
        "--no-report",
        "--workers",
        "0",  # serial: this test is about the deployer registry, not parallel runs
        "--",
        "-p",
        "tests.plugins.vendor_deployer",
        "-k",
        "test_smoke",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-4000:]
    run = json.loads((report / "run.json").read_text())
    assert run["driver"]["deploy"] == "vendor-operator", run["driver"]
    assert run["driver"]["version"].startswith("vendor-operator"), run["driver"]
    assert (report / "driver-state" / "vendor-operator" / "reconciled.json").is_file()
