"""Fixtures of the reporting tests: runs of the sample suite in a child pytest.

The sample suite (``sample_suite/``) is a stand-in for real suites: tests carrying our markers, one
failing, one skipped with a reason, one broken by an infrastructure error. It is never collected directly.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

collect_ignore = ["sample_suite"]

SAMPLE = pathlib.Path(__file__).parent / "sample_suite"
REPO = pathlib.Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 120


def sample_run_json(**overrides) -> dict:
    """The sample run.json with top-level fields replaced (``cluster`` merged)."""
    data = json.loads((SAMPLE / "run.json").read_text())
    cluster = overrides.pop("cluster", None)
    data.update(overrides)
    if cluster:
        data["cluster"] = {**data["cluster"], **cluster}
    return data


def run_sample(
    run_dir: pathlib.Path,
    *pytest_args: str,
    run_json: dict | None = None,
    fail: bool = True,
    report_dir: bool = True,
    pythonpath: pathlib.Path | None = None,
    target: pathlib.Path = SAMPLE,
) -> subprocess.CompletedProcess:
    """Run the sample suite in a child pytest with ``--report-dir run_dir`` (the harness would have written
    run.json; here it is copied in first). Returns the finished process (exit code 1 when a test failed)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(run_json if run_json is not None else sample_run_json()))
    args = [
        sys.executable,
        "-m",
        "pytest",
        str(target),
        "-p",
        "no:cacheprovider",
        "-q",
        "--rootdir",
        str(REPO),
        *(["--report-dir", str(run_dir)] if report_dir else []),
        *pytest_args,
    ]
    env = {**os.environ, "SAMPLE_FAIL": "1" if fail else "0"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pythonpath), env.get("PYTHONPATH")) if p)
    return subprocess.run(args, cwd=run_dir, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)


@pytest.fixture(scope="session")
def failing_run(tmp_path_factory) -> pathlib.Path:
    """A generated run (HTML included) of the whole sample suite with one failing test; its directory."""
    from conformance.reporting import build

    run_dir = tmp_path_factory.mktemp("reports") / "run-1"
    proc = run_sample(run_dir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    build.generate(run_dir)
    return run_dir
