"""End-to-end tests of a whole run through the CLI against the shared local cluster (``--cluster existing``,
the reference driver deployed beforehand under its own name as a "preinstalled" driver): a run passes with a
verdict line and run.json; a run interrupted with Ctrl-C (SIGINT) mid-test leaves no object of its run."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conformance.core import names
from conformance.k8s import sweep

from .preinstalled import reference_driver, start_run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def preinstalled(local_cluster, tmp_path_factory):
    """(profile path, k8s): the reference driver running on every node under a fresh driver name."""
    with reference_driver(local_cluster, tmp_path_factory.mktemp("harness-run")) as deployed:
        yield deployed


def _start(local_cluster, profile: Path, report: Path, *extra: str) -> subprocess.Popen:
    return start_run(local_cluster, profile, report, *extra)


def test_run_passes_with_verdict_and_run_json(local_cluster, preinstalled, tmp_path):
    profile, k8s = preinstalled
    proc = _start(local_cluster, profile, tmp_path / "report", "-k", "test_smoke")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "VERDICT: PASS" in out and "2 passed" in out, out
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    assert run["driver"]["name"] == yaml.safe_load(profile.read_text())["driver"] and run["finished"]
    assert run["cluster"]["nodes"] and run["devices"] and run["capabilities"]["multi_node"]["available"]
    assert sweep.labelled(k8s, run["run_id"]) == []


def test_interrupted_run_leaves_nothing_labelled(local_cluster, preinstalled, tmp_path):
    profile, k8s = preinstalled
    report = tmp_path / "report"
    proc = _start(local_cluster, profile, report, "-k", "test_pod_with_claim")
    try:
        deadline = time.monotonic() + 300
        while not (report / "run.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        run_id = json.loads((report / "run.json").read_text())["run_id"]
        selector = f"{names.RUN_LABEL}={run_id}"
        while not k8s.list("Pod", None, label_selector=selector):  # the test's pod exists: we are mid-test
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, out
    assert "VERDICT: INTERRUPTED" in out, out
    assert sweep.labelled(k8s, run_id) == [], out


def test_xdist_workers_share_the_controllers_session(local_cluster, preinstalled, tmp_path):
    """With ``-n 2`` the controller sets up once and both workers attach through the state file; the run
    passes and leaves nothing (the state file is removed at the end)."""
    profile, k8s = preinstalled
    proc = _start(local_cluster, profile, tmp_path / "report", "-n", "2", "-k", "test_smoke")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0 and "2 workers" in out and "VERDICT: PASS" in out, out
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    assert sweep.labelled(k8s, run["run_id"]) == []
    assert not (tmp_path / "report" / ".dra-session.json").exists()
