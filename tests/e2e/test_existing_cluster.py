"""The existing-cluster path, as on a real GPU cluster: `dra-conformance install` brings up a 2-node local
cluster with the reference driver installed from its Helm chart (a DaemonSet) and leaves it running; a run with
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

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.core import names
from conformance.k8s import sweep
from conformance.k8s.client import K8s
from tests.e2e.preinstalled import WatchedRun

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
HELD = Path(__file__).parent / "interrupt_suite" / "held.py"  # its test waits until released
DRIVER = "gpu.dra-conformance.test"  # fixtures/drivers/reference.yaml
RELEASE = NAMESPACE = "dra-reference-driver"  # its deploy_alternatives.helm: release and namespace
SELECTED = {  # test -> the outcome of `--cluster local --driver-deploy helm` (all pass there)
    "test_driver_registers_with_every_kubelet": "passed",
    "test_registration_socket_advertises_the_v1_service": "passed",
    "test_cdi_spec_exists_while_prepared_and_is_removed_after": "passed",
    "test_list_reports_the_claim_for_the_referencing_container_only": "passed",
    "test_repeated_prepare_returns_the_same_devices_and_cdi_ids": "passed",
    "test_pod_with_claim_runs_and_sees_its_device": "passed",
}


def _cli(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def installed():
    """(kubeconfig, k8s): a local cluster with the reference chart installed, removed at the end."""
    proc = _cli("install", "--driver", "reference", "--driver-deploy", "helm", "--nodes", "2")
    out = proc.stdout + proc.stderr
    name = re.search(r"cluster down --name (\S+)", out)
    try:
        assert proc.returncode == 0 and name, out[-4000:]
        kubeconfig = re.search(r"^kubeconfig: (\S+)$", out, re.M).group(1)
        yield kubeconfig, K8s.from_kubeconfig(kubeconfig)
    finally:
        if name:
            _cli("cluster", "down", "--name", name.group(1))


def _driver_objects(k8s: K8s) -> dict:
    """The driver's installed objects by identity and spec version (uid, metadata.generation): an object nobody
    deleted or modified keeps both (status updates do not count)."""
    ds = [o for o in k8s.list("DaemonSet", None) if o.namespace == NAMESPACE]
    slices = [s for s in k8s.list("ResourceSlice") if s.get("spec.driver") == DRIVER]
    classes = [k8s.get("DeviceClass", DRIVER)]
    return {(o.kind, o.name): (o.uid, o.get("metadata.generation")) for o in ds + slices + classes}


def _release(k8s: K8s) -> dict:
    """The driver's Helm release as it stands: its release Secrets (``owner=helm,name=<release>``) and the
    DaemonSets of its namespace, each by uid, resourceVersion and generation (a write of any kind, status
    included, changes the resourceVersion). An empty probe is an error, never an equal "before" and "after"."""
    query = {"labelSelector": f"owner=helm,name={RELEASE}"}
    secrets = k8s.get_json(f"/api/v1/namespaces/{NAMESPACE}/secrets", query)["items"]
    found = {("Secret", s["metadata"]["name"]): _identity(s["metadata"]) for s in secrets}
    found |= {("DaemonSet", d.name): _identity(d.get("metadata")) for d in k8s.list("DaemonSet", NAMESPACE)}
    kinds = sorted({kind for kind, _ in found})
    assert kinds == ["DaemonSet", "Secret"], f"the probe did not find release {RELEASE} in {NAMESPACE}: {found}"
    return found


def _identity(meta: dict) -> tuple:
    return meta["uid"], meta["resourceVersion"], meta.get("generation")


def _outcomes(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        kids = {c.tag for c in case}
        out[case.get("name")] = (
            "failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed"
        )
    return out


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
    assert f"deploying driver {DRIVER} (preinstalled)" in out, out[-6000:]
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


# issue 22 §2: run --plan and a driver-aware list
PLAN_ROW = re.compile(r"^  (run|skip|waived|fail|at-start) +(\S+)(?:  -- (.*))?$", re.M)


def _in(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """``dra-conformance ARGV`` run from ``cwd`` (to see that it writes nothing there)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "conformance.cli", *argv]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def _cluster_state(k8s: K8s) -> dict:
    """Namespaces, pods, ResourceClaims and ResourceSlices by kind, namespace and name -> (uid, generation): an
    object created, deleted or re-created changes the set. The probe must find namespaces, pods and slices (an
    empty listing is an error, never an equal "before" and "after")."""
    state = {}
    for kind in ("Namespace", "Pod", "ResourceClaim", "ResourceSlice"):
        objs = k8s.list(kind, None) if kind in ("Pod", "ResourceClaim") else k8s.list(kind)
        state[kind] = {(o.namespace, o.name): (o.uid, o.get("metadata.generation")) for o in objs}
    assert state["Namespace"] and state["Pod"] and state["ResourceSlice"], state
    return state


def test_plan_names_nodes_and_decisions_and_creates_nothing(installed, tmp_path):
    # given: the cluster with the driver installed, its objects now, an empty working directory
    kubeconfig, k8s = installed
    before = _cluster_state(k8s)
    nodes = [n.name for n in k8s.list("Node")]
    # when: a run is asked for its plan
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--plan"]
    proc = _in(tmp_path, *argv, "--profile", "standard")
    out = proc.stdout + proc.stderr
    # then: exit 0, both nodes named, a skip with its evidence, the counts; nothing created, nothing written
    assert proc.returncode == 0 and "PLAN of `dra-conformance run`" in proc.stdout, out[-6000:]
    assert len(nodes) == 2 and all(n in proc.stdout for n in nodes), out[-6000:]
    assert "deploy mode preinstalled" in proc.stdout, out[-6000:]
    rows = PLAN_ROW.findall(proc.stdout)
    skips = [(test, why) for decision, test, why in rows if decision == "skip"]
    assert skips and all(why for _, why in skips), out[-6000:]
    counted = re.search(r"tests \(profile standard\): (\d+) selected: (\d+) run, (\d+) skip", proc.stdout)
    assert counted and int(counted[1]) == len(rows) and int(counted[3]) == len(skips), out[-6000:]
    assert int(counted[2]) == sum(1 for d, _, _ in rows if d == "run") > 0, out[-6000:]
    assert _cluster_state(k8s) == before
    assert list(tmp_path.iterdir()) == []
    # when: the same profile is listed on the cluster, as JSON
    listed = _in(
        tmp_path, "list", "--driver", "reference", "--profile", "standard", "--kubeconfig", kubeconfig, "-o", "json"
    )
    # then: it parses and agrees with the plan test by test (decision and evidence), and wrote nothing either
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    doc = json.loads(listed.stdout)
    assert {d["id"]: (d["decision"], d["reason"]) for d in doc} == {t: (d, w) for d, t, w in rows}
    assert {d["area"] for d in doc} >= {"api_v1", "allocation", "node"}
    assert list(tmp_path.iterdir()) == []
    assert _cluster_state(k8s) == before


def test_plan_decisions_are_what_the_run_then_does(installed, tmp_path):
    # given: the plan of a standard run on the cluster; one test it would run and one it would skip
    kubeconfig, k8s = installed
    base = ["--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--profile", "standard"]
    planned = _in(tmp_path, "run", *base, "--plan")
    rows = {test: (decision, why) for decision, test, why in PLAN_ROW.findall(planned.stdout)}
    assert planned.returncode == 0 and rows, planned.stdout[-3000:] + planned.stderr[-3000:]
    ran = next(t for t, (d, _) in rows.items() if d == "run" and t.startswith("suites/smoke/") and "[" not in t)
    skipped = next(t for t, (d, _) in rows.items() if d == "skip" and "[" not in t)
    # when: the run runs those two tests
    report = tmp_path / "report"
    argv = ["run", *base, "--workers", "0", "--no-report", "--report-dir", str(report), "--", ran, skipped]
    proc = _in(tmp_path, *argv)
    out = proc.stdout + proc.stderr
    # then: one passed, the other skipped with the plan's evidence
    assert proc.returncode == 0, out[-6000:]
    assert _outcomes(report / "junit.xml") == {ran.split("::")[-1]: "passed", skipped.split("::")[-1]: "skipped"}
    messages = [s.get("message") or "" for s in ET.parse(report / "junit.xml").iter("skipped")]
    assert len(messages) == 1 and rows[skipped][1] in messages[0], (messages, rows[skipped])
