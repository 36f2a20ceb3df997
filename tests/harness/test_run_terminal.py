"""``dra-conformance run``'s in-process pytest plugins (conformance/runner/terminal.py): a run stopped by
``pytest.exit`` at its set-up names the reason once (breaker B6), and a kubeconfig list holding an empty file
reaches the cluster while a lone empty kubeconfig is bad input naming the file (breaker s15 D3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

CLI = [sys.executable, "-m", "conformance.cli"]
REASON = "dra-conformance: ClusterUnavailable: the probe's reason"
# pytest.main with a plugin that stops the session at `where` (sessionstart or a test), with or without ExitOnce
PROBE = """
import sys
import pytest
from conformance.runner import terminal

class Stop:
    def pytest_sessionstart(self, session):
        if sys.argv[1] == "sessionstart":
            pytest.exit(sys.argv[3], returncode=3)

plugins = [Stop()] + ([terminal.ExitOnce()] if sys.argv[2] == "once" else [])
sys.exit(pytest.main([sys.argv[4], "-p", "no:cacheprovider", "-q"], plugins=plugins))
"""
TEST = f"import pytest\n\n\ndef test_stops():\n    pytest.exit({REASON!r}, returncode=3)\n"


def _probe(tmp_path: Path, where: str, mode: str) -> subprocess.CompletedProcess:
    test = tmp_path / "test_probe.py"
    test.write_text(TEST)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}
    return subprocess.run(
        [sys.executable, "-c", PROBE, where, mode, REASON, str(test)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


def test_an_exit_at_session_start_is_printed_once_on_stderr(tmp_path):
    """The control shows B6 (pytest's stderr ``Exit:`` line and its terminal ``! _pytest.outcomes.Exit !`` line);
    with ExitOnce the stderr line alone remains, and the exit code is the one given."""
    control = _probe(tmp_path, "sessionstart", "control")
    assert control.returncode == 3 and (control.stdout + control.stderr).count(REASON) == 2, control
    once = _probe(tmp_path, "sessionstart", "once")
    assert once.returncode == 3 and f"Exit: {REASON}" in once.stderr, once
    assert (once.stdout + once.stderr).count(REASON) == 1 and "_pytest.outcomes.Exit" not in once.stdout, once


def test_an_exit_in_a_test_keeps_its_only_line(tmp_path):
    """After session start pytest writes no stderr line: the terminal's line is the only one and stays."""
    proc = _probe(tmp_path, "test", "once")
    assert proc.returncode == 3 and (proc.stdout + proc.stderr).count(REASON) == 1, proc
    assert f"! _pytest.outcomes.Exit: {REASON} !" in proc.stdout, proc


def _run(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [*CLI, "run", "--cluster", "existing", "--no-report", "--report-dir", str(tmp_path / "r"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path, env={**os.environ, **env})


def test_run_with_an_empty_file_in_the_kubeconfig_list_reaches_the_cluster_and_a_lone_one_is_bad_input(tmp_path):
    """D3 end to end, no cluster: ``KUBECONFIG=empty.kc:a.kc --context prod`` (a.kc: https://127.0.0.1:1) ends
    "unreachable", exit 3, not "empty.kc file is empty"; ``--kubeconfig empty.kc`` is exit 4 naming the file;
    each reason is printed once (B6)."""
    (tmp_path / "empty.kc").write_text("")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "prod",
    }
    (tmp_path / "a.kc").write_text(yaml.safe_dump(doc))
    listed = _run(tmp_path, "--context", "prod", env={"KUBECONFIG": f"empty.kc{os.pathsep}a.kc", "PYTEST_ADDOPTS": ""})
    out = listed.stdout + listed.stderr
    assert listed.returncode == 3 and "VERDICT: ERROR (cluster or driver not usable)" in listed.stdout, out
    assert "is empty" not in out and out.count("API server https://127.0.0.1:1 is unreachable") == 1, out
    lone = _run(tmp_path, "--kubeconfig", "empty.kc", env={"PYTEST_ADDOPTS": ""})
    out = lone.stdout + lone.stderr
    assert lone.returncode == 4 and "VERDICT: ERROR (bad input)" in lone.stdout, out
    assert out.count("empty.kc (from --kubeconfig): not a kubeconfig: empty (fix: ") == 1, out
