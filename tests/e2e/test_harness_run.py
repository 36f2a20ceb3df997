"""End-to-end tests of a whole run through the CLI against the shared local cluster (``--cluster existing``,
the reference driver deployed beforehand under its own name as a "preinstalled" driver): a run passes with a
verdict line and run.json; Ctrl-C (SIGINT) while the run is provably inside a test (interrupt_suite/held.py
waits until this module releases it), inside the session's teardown sweep, or (a second Ctrl-C) inside a test's
own teardown (a finalizer of ours holds an object of the run there) ends the run promptly with exit 2 and
leaves nothing of it. Every signal is sent only after the phase was observed, never after a sleep."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from conformance.core import errors, names
from conformance.k8s import sweep
from conformance.runner.session import STATE_FILE
from tests.e2e.interrupt_suite.held import RELEASE
from tests.e2e.preinstalled import WatchedRun, reference_driver, run_command, start_run

pytestmark = pytest.mark.e2e
HELD = Path(__file__).parent / "interrupt_suite" / "held.py"  # its test waits until released
HOLD_FINALIZER = "dra-conformance.test/e2e-hold"


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


def _held(run: WatchedRun, k8s, report: Path):
    """(run ID, claim) once the held test (interrupt_suite/held.py) created its claim: from then on the run
    waits inside that test until :func:`_release`."""
    run_id = run.wait_until(
        "run.json", lambda: (report / "run.json").exists() and json.loads((report / "run.json").read_text())["run_id"]
    )
    selector = f"{names.RUN_LABEL}={names.label_value(run_id)}"
    claims = run.wait_until("the held test's claim", lambda: k8s.list("ResourceClaim", None, label_selector=selector))
    return run_id, claims[0]


def _release(k8s, claim) -> None:
    k8s.patch("ResourceClaim", claim.name, {"metadata": {"labels": {RELEASE: "yes"}}}, claim.namespace)


def test_interrupted_run_leaves_nothing_labelled(local_cluster, preinstalled, tmp_path):
    """Ctrl-C while the run waits inside a test (for a label only this test could set): the run ends within
    60 s with exit 2 and VERDICT: INTERRUPTED, and leaves no object of its run and no state file."""
    profile, k8s = preinstalled
    report = tmp_path / "report"
    with WatchedRun(run_command(local_cluster, profile, report, str(HELD))) as run:
        run_id, _claim = _held(run, k8s, report)
        code, took = run.ctrl_c(within=60)
    assert code == 2 and "VERDICT: INTERRUPTED" in run.output, run.tail()
    assert sweep.labelled(k8s, run_id) == [], run.tail()
    assert not (report / STATE_FILE).exists()
    print(f"exit {code} {took:.1f}s after Ctrl-C")


def test_ctrl_c_during_the_teardown_sweep_ends_the_run_and_requests_every_deletion(
    local_cluster, preinstalled, tmp_path
):
    """Ctrl-C while the session sweep waits for an object of the run that a finalizer holds: the run ends
    within 60 s with exit 2 and VERDICT: INTERRUPTED, no state file; every object of the run is being deleted,
    and once the finalizer is gone nothing of the run is left."""
    profile, k8s = preinstalled
    report = tmp_path / "report"
    hold = f"e2e-hold-{uuid.uuid4().hex[:6]}"
    try:
        with WatchedRun(run_command(local_cluster, profile, report, str(HELD))) as run:
            run_id, claim = _held(run, k8s, report)
            # given: a namespace of the run that only this test can let go
            k8s.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": hold, "labels": names.run_labels(run_id), "finalizers": [HOLD_FINALIZER]},
                }
            )
            # when: the test ends and the session sweep deletes the namespace (only the sweep deletes it), Ctrl-C
            _release(k8s, claim)
            run.wait_until(
                "the sweep's deletion of the held namespace",
                lambda: k8s.get("Namespace", hold).get("metadata.deletionTimestamp"),
            )
            code, took = run.ctrl_c(within=60)
        # then: interrupted, promptly, and every object of the run has its deletion requested
        assert code == 2 and "VERDICT: INTERRUPTED" in run.output and "1 passed" in run.output, run.tail()
        assert not (report / STATE_FILE).exists()
        assert [o.ref for o in sweep.labelled(k8s, run_id) if not o.get("metadata.deletionTimestamp")] == []
    finally:
        with contextlib.suppress(errors.NotFound):
            k8s.patch("Namespace", hold, {"metadata": {"finalizers": None}})
    deadline = time.monotonic() + 120
    while sweep.labelled(k8s, run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sweep.labelled(k8s, run_id) == []
    print(f"exit {code} {took:.1f}s after Ctrl-C")


def test_second_ctrl_c_during_a_tests_teardown_still_sweeps_the_run(local_cluster, preinstalled, tmp_path):
    """Ctrl-C in a test's wait, then Ctrl-C again while that test's tracker waits for its claim to go (a
    finalizer of ours holds it): the session teardown still runs, and once the finalizer is gone the run ends
    within 60 s with exit 2, leaving nothing of the run (the sweep deleted the namespace the interrupted tracker
    never reached) and no state file."""
    profile, k8s = preinstalled
    report = tmp_path / "report"
    claim = None
    try:
        with WatchedRun(run_command(local_cluster, profile, report, str(HELD))) as run:
            run_id, claim = _held(run, k8s, report)
            # given: the test's claim can only go once this test allows it
            k8s.patch("ResourceClaim", claim.name, {"metadata": {"finalizers": [HOLD_FINALIZER]}}, claim.namespace)
            # when: Ctrl-C in the wait, and again once the tracker deletes the claim (the test's teardown)
            run.ctrl_c(within=None)
            run.wait_until(
                "the tracker's deletion of the claim",
                lambda: k8s.get("ResourceClaim", claim.name, claim.namespace).get("metadata.deletionTimestamp"),
            )
            run.ctrl_c(within=None)
            # then: the session teardown still starts (run.json gets its end time right before the sweep), and
            # once the claim may go the sweep removes the rest (the namespace the tracker never reached)
            run.wait_until(
                "the session teardown (run.json finished)",
                lambda: json.loads((report / "run.json").read_text())["finished"],
            )
            _let_go(k8s, claim)
            code, took = run.exit_within(60)
        assert code == 2 and "VERDICT: INTERRUPTED" in run.output, run.tail()
        assert sweep.labelled(k8s, run_id) == [], run.tail()
        assert not (report / STATE_FILE).exists()
    finally:
        if claim is not None:
            _let_go(k8s, claim)
    print(f"exit {code} {took:.1f}s after the finalizer was removed")


def _let_go(k8s, claim) -> None:
    with contextlib.suppress(errors.NotFound):
        k8s.patch("ResourceClaim", claim.name, {"metadata": {"finalizers": None}}, claim.namespace)


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
