"""The existing-cluster path, as on a real GPU cluster: on the cluster of conftest.py (a 2-node local cluster
with the reference driver installed from its Helm chart, a DaemonSet), a run with
``--cluster existing --kubeconfig ... --node-access privileged-pod --driver-deploy preinstalled`` then checks
registration (GetInfo through the helper pods' gRPC relay), a CDI spec, PodResources, the DRAPlugin service and a
pod with a device. Each selected test passes, as on ``--cluster local --driver-deploy helm``; afterwards the helper
pods are gone and the driver's DaemonSet, DeviceClass and slices are untouched; a Ctrl-C while a test runs (the
held test of interrupt_suite/held.py) ends the run with exit 2 and removes the helper pods too; the disruptive
profile is refused without ``--allow-disruptive`` before anything is created. Never touching a customer's driver
(issue 22 §1): a run with no ``--driver-deploy`` checks the installed driver (preinstalled) and leaves its Helm
release (the release Secrets, the DaemonSet: uid, resourceVersion, generation) as it was; ``--allow-install
--driver-deploy helm`` exits 4 naming the release that exists, and changes nothing either. About 4 minutes on an
idle 2-core machine; 6.5 minutes measured at a 1-min load of about 30."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.core import names
from conformance.k8s import sweep
from tests.e2e.existing.common import (
    DRIVER,
    HELD,
    NAMESPACE,
    RELEASE,
    SELECTED,
    _cli,
    _driver_objects,
    _outcomes,
    _release,
)
from tests.e2e.preinstalled import WatchedRun

pytestmark = pytest.mark.e2e


def test_existing_cluster_run_matches_local_and_touches_nothing_else(installed, tmp_path):
    # given: a cluster with the driver installed by its chart, and its objects now
    kubeconfig, k8s = installed
    before = _driver_objects(k8s)
    # when: the existing-cluster path runs the selected node and pod tests (xdist workers use the helper pods)
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference"]
    argv += ["--driver-deploy", "preinstalled", "--node-access", "privileged-pod", "--profile", "standard"]
    argv += ["--workers", "2", "--no-report", "--report-dir", str(tmp_path), "--", "-k", " or ".join(SELECTED)]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: each test has its local-run outcome, no helper pod or run namespace is left, the driver is untouched
    assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-6000:]
    assert _outcomes(tmp_path / "junit.xml") == SELECTED, out[-6000:]
    left = [ns.name for ns in k8s.list("Namespace") if names.RUN_LABEL in (ns.get("metadata.labels") or {})]
    assert left == [], left
    assert not [p for p in k8s.list("Pod", None) if p.name.startswith("helper-")]
    assert _driver_objects(k8s) == before


def _existing_run(kubeconfig: str, report: Path, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--kubeconfig", kubeconfig]
    argv += ["--driver", "reference", "--driver-deploy", "preinstalled", "--node-access", "privileged-pod"]
    return argv + ["--profile", "core", "--workers", "0", "--no-report", "--report-dir", str(report), "--", *extra]


def test_ctrl_c_removes_the_helper_pods(installed, tmp_path):
    # given: a run held inside a test (its claim exists), its helper pods running
    kubeconfig, k8s = installed
    with WatchedRun(_existing_run(kubeconfig, tmp_path, str(HELD))) as run:
        selector = names.RUN_LABEL  # any object of a run: the module's runs go one after another
        claim = run.wait_until(
            "the held test's claim", lambda: k8s.list("ResourceClaim", None, label_selector=selector)
        )
        run_id = claim[0].labels[names.RUN_LABEL]
        helpers = run.wait_until(
            "helper pods",
            lambda: [p for p in k8s.list("Pod", None, label_selector=selector) if p.name.startswith("helper-")],
        )
        # when: Ctrl-C
        code, _took = run.ctrl_c(within=120)
    # then: the run is interrupted and nothing of it is left, helper pods included
    assert code == 2 and "VERDICT: INTERRUPTED" in run.output and len(helpers) == 2, run.tail()
    assert sweep.labelled(k8s, run_id) == [], run.tail()
    assert not [p for p in k8s.list("Pod", helpers[0].namespace)], run.tail()


def test_disruptive_profile_is_refused_without_opt_in(installed, tmp_path):
    kubeconfig, k8s = installed
    namespaces = {ns.name for ns in k8s.list("Namespace")}
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference"]
    proc = _cli(*argv, "--driver-deploy", "preinstalled", "--profile", "disruptive", "--report-dir", str(tmp_path))
    assert proc.returncode == 4 and "--allow-disruptive" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert {ns.name for ns in k8s.list("Namespace")} == namespaces


def test_a_run_without_driver_deploy_checks_the_installed_release_and_leaves_it_untouched(installed, tmp_path):
    # given: the cluster with the driver's Helm release, and the release now
    kubeconfig, k8s = installed
    before = _release(k8s)
    # when: a run names no --driver-deploy (the reference profile's own mode would deploy it: bundled)
    argv = [
        "run",
        "--cluster",
        "existing",
        "--kubeconfig",
        kubeconfig,
        "--driver",
        "reference",
        "--profile",
        "standard",
    ]
    argv += [
        "--workers",
        "0",
        "--no-report",
        "--report-dir",
        str(tmp_path),
        "--",
        "-k",
        "test_pod_with_claim_runs_and_sees",
    ]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: it qualified the installed driver (preinstalled), and the release is exactly as it was
    assert proc.returncode == 0 and "VERDICT: PASS" in out and "1 passed" in out, out[-6000:]
    assert f"checking the installed driver {DRIVER} (preinstalled: nothing installed)" in out, out[-6000:]
    assert _release(k8s) == before


def test_allow_install_refuses_a_release_that_exists_and_changes_nothing(installed, tmp_path):
    # given: the cluster with the driver's Helm release, and the release now
    kubeconfig, k8s = installed
    before = _release(k8s)
    # when: a run asks to install the same release, with the opt-in
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--profile", "core"]
    argv += [
        "--driver-deploy",
        "helm",
        "--allow-install",
        "--workers",
        "0",
        "--no-report",
        "--report-dir",
        str(tmp_path),
    ]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: bad input (exit 4) naming the release and the namespace, nothing installed or uninstalled
    assert proc.returncode == 4 and "VERDICT: ERROR (bad input)" in out, out[-6000:]
    assert f"helm release {RELEASE!r} already exists in namespace {NAMESPACE!r}" in out, out[-6000:]
    assert _release(k8s) == before
    left = [ns.name for ns in k8s.list("Namespace") if names.RUN_LABEL in (ns.get("metadata.labels") or {})]
    assert left == [], left
