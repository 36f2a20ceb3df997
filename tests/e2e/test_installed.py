"""dra-conformance installed the way its users install it: wheels into a fresh venv, used from an empty
directory (issue 23 acceptance). The plugin alone lists the standard profile's tests (``dra-conformance list``
and ``pytest --pyargs conformance.suites``) and writes nothing there; with the lab added, ``dra-conformance
setup`` finds everything in the user's cache and ``dra-conformance run`` (what `make conformance` runs)
qualifies the reference driver on a local cluster with PASS, its report under ``./reports``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist import wheels

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _sh(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, (proc.args, proc.returncode, (proc.stdout + proc.stderr)[-4000:])
    return proc.stdout + proc.stderr


def test_the_plugin_alone_lists_and_with_the_lab_qualifies_from_an_empty_directory(tmp_path):
    built = wheels.build()
    venv, here = tmp_path / "venv", tmp_path / "empty"
    here.mkdir()
    _ok(_sh([sys.executable, "-m", "venv", str(venv)], tmp_path))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    pins = ["-c", str(wheels.constraints(tmp_path / "constraints.txt"))]
    _ok(_sh([*pip, *pins, str(built["dra_conformance"])], tmp_path))
    cli = str(venv / "bin" / "dra-conformance")

    # given only the plugin, when listing, then the standard profile's tests and nothing written here
    listed = _ok(_sh([cli, "list", "--profile", "standard", "--driver", "reference"], here))
    assert "conformance/suites/smoke/test_smoke.py::" in listed and " tests collected" in listed
    collected = _ok(
        _sh(
            [str(venv / "bin" / "python"), "-m", "pytest", "--pyargs", "conformance.suites", "--driver", "reference"]
            + ["--profile", "core", "--collect-only", "-q", "-p", "no:cacheprovider"],
            here,
        )
    )
    assert "test_pod_with_claim_runs_and_sees_its_device" in collected
    assert sorted(os.listdir(here)) == [], "listing wrote into the working directory"
    no_lab = _sh([cli, "run", "--cluster", "local", "--driver", "reference"], here)
    assert no_lab.returncode == 4 and "unknown cluster provider 'local'" in no_lab.stdout + no_lab.stderr, no_lab
    assert sorted(os.listdir(here)) == [], "a refused run left a report directory"

    # given the lab too, when set up and run, then PASS with the report in ./reports
    _ok(_sh([*pip, *pins, str(built["dra_conformance_lab"])], tmp_path))
    _ok(_sh([cli, "setup"], here, timeout=1200))
    run = _sh([cli, "run", "--cluster", "local", "--driver", "reference", "--profile", "core"], here, timeout=1200)
    reports = [p for p in (here / "reports").iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(reports) == 1, (sorted(os.listdir(here)), run.stdout[-3000:], run.stderr[-3000:])
    summary = json.loads((reports[0] / "summary.json").read_text())
    assert (run.returncode, summary["verdict"]) == (0, "PASS"), (summary["verdictReasons"], run.stdout[-3000:])
    assert summary["counts"]["passed"] >= 5 and summary["counts"]["failed"] == 0, summary["counts"]
    assert not list(venv.glob("lib/python3*/site-packages/reports")), "a report went into site-packages"
