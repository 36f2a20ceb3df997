"""In-cluster mode as a Kubernetes Job (issue 25 §5; ci/in-cluster/job.yaml and run.sh, what the three CI
templates run): on a fresh 1-node local cluster, run.sh imports the suite image and starts the Job; a run that
cannot start ends the Job ``Failed`` with the run's exit code and no report, the core profile ends it
``Complete`` with VERDICT PASS, the report copied out of the pod after the run ended, and the CI templates' next
step (``dra-conformance report OUT --history-from``) reads it; the Job and the RBAC objects are gone after each.

Not in ``make test`` (about 7.5 min, most of it importing the 425 MiB suite image and the pod's run): ``make
in-cluster-job`` sets DRA_E2E_IN_CLUSTER_JOB=1 and runs it (figures in ci/README.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.provider import free_slot
from conformance_lab.toolchain import cache, versions

REPO = Path(__file__).resolve().parents[2]
RUN_SH = REPO / "ci" / "in-cluster" / "run.sh"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.cluster_lifecycle,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DRA_E2E_IN_CLUSTER_JOB"), reason="about 7.5 min: `make in-cluster-job` runs it"
    ),
]


def _run_sh(out: Path, timeout: float = 1500, **env: str) -> subprocess.CompletedProcess:
    """ci/in-cluster/run.sh with this venv's CLI, OUT=``out`` and ``env``; its output is echoed for the log."""
    venv = Path(sys.executable).parent
    full = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}  # unset: run.sh takes LOCAL_CLUSTER
    full |= {"DRA_CONFORMANCE": str(venv / "dra-conformance"), "PYTHON": sys.executable, "OUT": str(out),
             "TIMEOUT": "1200", "HOLD_S": "300", **env}  # fmt: skip
    proc = subprocess.run(["bash", str(RUN_SH)], cwd=REPO, env=full, capture_output=True, text=True, timeout=timeout)
    print(proc.stdout[-6000:], proc.stderr[-3000:], sep="\n")
    return proc


def _left(kubeconfig: str) -> list[str]:
    """What run.sh must have removed: the Job's namespace (and the Job in it), the ClusterRole and its binding."""
    kubectl = cache.k8s_binary("kubectl", versions.load().k8s_tag())  # the default release the cluster runs
    argv = [
        str(kubectl),
        "--kubeconfig",
        kubeconfig,
        "get",
        "namespaces,clusterroles,clusterrolebindings",
        "-o",
        "name",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return [o for o in out if o.endswith(("/dra-conformance", "/dra-conformance-suite"))]


@pytest.fixture(scope="module")
def cluster():
    """(name, kubeconfig) of a 1-node local cluster whose in-cluster clients reach the API server (DaemonSet
    paths: the ``kubernetes`` Service works without kube-proxy); removed after the module."""
    slot = free_slot()
    name = f"injob{slot}"
    handle = LocalCluster(LocalClusterConfig(name=name, nodes=1, slot=slot, daemonset_paths=True), progress=print).up()
    try:
        yield name, str(handle.kubeconfig)
    finally:
        LocalCluster.load(name).down()


def test_a_run_that_cannot_start_fails_the_job_with_its_exit_code(cluster, tmp_path):
    # given: the suite image imported by run.sh into the cluster's node
    name, kubeconfig = cluster
    # when: the Job runs a driver profile that does not exist
    proc = _run_sh(tmp_path / "report", LOCAL_CLUSTER=name, SUITE_ARGS="--driver no-such-driver --profile core")
    # then: the run's exit code (4, configuration) is run.sh's, the Job Failed, nothing copied, nothing left
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "job Failed" in proc.stdout and "no report to copy" in proc.stderr, proc.stdout[-2000:]
    assert not (tmp_path / "report").exists()
    assert _left(kubeconfig) == []


def test_the_core_profile_as_a_job_passes_and_its_report_is_copied_out(cluster, tmp_path):
    # given: the cluster's kubeconfig, as a CI job has it (images already on the node)
    _name, kubeconfig = cluster
    out = tmp_path / "nightly"
    # when: run.sh runs the default arguments (reference driver from its chart, core profile, helper pods)
    proc = _run_sh(out, KUBECONFIG=kubeconfig)
    # then: PASS, the Job Complete, the report read from the copy, and the templates' report step takes it
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "job Complete" in proc.stdout and "report copied to" in proc.stdout, proc.stdout[-2000:]
    doc = json.loads((out / "summary.json").read_text())
    assert doc["verdict"] == "PASS" and doc["counts"]["passed"] >= 5 and doc["counts"]["failed"] == 0, doc["counts"]
    assert (out / "junit.xml").is_file() and (out / "allure-report" / "index.html").is_file()
    cli = str(Path(sys.executable).parent / "dra-conformance")
    argv = [cli, "report", str(out), "--no-html", "--history-from", str(tmp_path / "ci-history")]
    report = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    assert _left(kubeconfig) == []
