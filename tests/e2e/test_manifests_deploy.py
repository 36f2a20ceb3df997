"""The reference driver deployed the way a vendor's YAML bundle is (``--driver-deploy manifests`` with a profile
whose ``deploy.dir`` names one file: the reference chart rendered by the pinned helm beforehand) runs as a
DaemonSet on every node of a fresh local cluster, registers with every kubelet and runs a pod with a claim; the
deployer's tear-down leaves none of the bundle's objects in the (kept) cluster -- namespace, RBAC,
ValidatingAdmissionPolicy, DeviceClass, DaemonSet -- and no ResourceSlice of the driver; after ``cluster down``
nothing of it is left on the host. A whole `dra-conformance run`; about 2-3 minutes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conformance_lab.toolchain import cache

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TESTS = "test_driver_registers_with_every_kubelet or test_pod_with_claim_runs_and_sees_its_device"
NAMESPACE = "dra-reference-driver"


def _vendor_bundle(directory: Path) -> Path:
    """A profile for the reference driver whose deploy is a single YAML bundle file next to it."""
    helm = cache.tool_binary("helm")
    chart = REPO / "reference_driver" / "deploy" / "chart"
    rendered = subprocess.run(
        [
            str(helm),
            "template",
            "vendor",
            str(chart),
            "--namespace",
            NAMESPACE,
            "--set",
            "stateDir=/var/lib/kubelet/drd",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    (directory / "bundle.yaml").write_text(rendered)
    profile = yaml.safe_load((REPO / "fixtures" / "drivers" / "reference.yaml").read_text())
    profile.pop("deploy_alternatives")
    profile["name"] = "vendor"  # its file stem (profiles.check_file)
    profile["deploy"] = {
        "mode": "manifests",
        "dir": "bundle.yaml",
        "namespace": NAMESPACE,
        "images": ["reference-driver"],
    }
    (directory / "vendor.yaml").write_text(yaml.safe_dump(profile))
    return directory / "vendor.yaml"


def _left_in_cluster(kubeconfig: str, k8s_version: str) -> list[str]:
    kubectl = cache.k8s_binary("kubectl", k8s_version)
    kinds = "namespaces,clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings"
    kinds += ",deviceclasses,daemonsets,resourceslices"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", kubeconfig, "get", kinds, "-A", "-o", "name"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return [o for o in out if "vendor" in o or NAMESPACE in o or o.startswith(("resourceslice", "deviceclass"))]


@pytest.mark.slow  # its own cluster (the run's, a free slot), started after the shared one (which owns kube-proxy)
def test_reference_driver_from_a_vendor_bundle_passes_and_leaves_nothing(tmp_path):
    # given: a profile whose driver comes as one YAML bundle file, and the host's mounts before the run
    profile = _vendor_bundle(tmp_path)
    mounts = [m for m in Path("/proc/mounts").read_text().splitlines() if " /var/lib/kubelet " in m]
    # when: a run applies the bundle, runs two node tests, tears the driver down and keeps the cluster
    argv = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "local", "--driver", str(profile)]
    argv += ["--driver-deploy", "manifests", "--profile", "core", "--feature-gates", "all", "--no-report"]
    argv += ["--keep-cluster", "--report-dir", str(tmp_path / "report"), "--", "-k", TESTS]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    out = proc.stdout + proc.stderr
    assert (tmp_path / "report" / "run.json").is_file(), out[-4000:]  # a run that ended before its cluster was up
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    name = run["cluster"]["nodes"][0].rsplit("-node-", 1)[0]
    try:
        left = _left_in_cluster(
            f"/var/lib/dra-conformance/clusters/{name}/admin.kubeconfig", run["cluster"]["k8s_version"]
        )
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", name],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
    # then: both pass, the bundle's objects and the driver's slices are gone, the host looks as before
    assert proc.returncode == 0 and "VERDICT: PASS" in out and "2 passed" in out, out[-4000:]
    assert "deploying driver gpu.dra-conformance.test (manifests)" in out
    assert left == [], left
    assert down.returncode == 0, down.stdout + down.stderr
    assert [m for m in Path("/proc/mounts").read_text().splitlines() if " /var/lib/kubelet " in m] == mounts
