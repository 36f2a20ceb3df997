"""The reference driver's Helm chart, rendered by the pinned helm, is accepted by the real API server of the local
cluster (server-side dry-run): RBAC, ValidatingAdmissionPolicy + binding, DeviceClass, ConfigMap, DaemonSet."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conformance_lab.toolchain import cache
from kubernetes import client, config

from tests.e2e import kube

pytestmark = pytest.mark.e2e

DEPLOY = Path(__file__).resolve().parents[2] / "reference_driver" / "deploy"


@pytest.fixture(scope="module")
def core(local_cluster):
    return client.CoreV1Api(config.new_client_from_config(config_file=str(local_cluster.kubeconfig)))


@pytest.fixture
def namespace(core):
    ns = kube.namespace(core, "refchart")
    yield ns
    kube.delete_namespace(core, ns)


def test_helm_chart_manifests_apply_with_server_side_dry_run(local_cluster, core, namespace):
    """The chart's rendered manifests (RBAC, ValidatingAdmissionPolicy + binding, DeviceClass, ConfigMap,
    DaemonSet) are accepted by the real API server (server-side dry-run)."""
    helm = cache.tool_binary("helm")
    kubectl = cache.k8s_binary("kubectl", local_cluster.k8s_version)
    rendered = subprocess.run(
        [
            str(helm),
            "template",
            "refdrv",
            str(DEPLOY / "chart"),
            "--namespace",
            namespace,
            "--set",
            "driverName=dryrun.dra-conformance.test",
            "--kube-version",
            local_cluster.k8s_version.lstrip("v"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    proc = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(local_cluster.kubeconfig),
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            "-",
        ],
        input=rendered,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = {line.split("/")[0] for line in proc.stdout.splitlines()}
    assert {
        "daemonset.apps",
        "deviceclass.resource.k8s.io",
        "clusterrole.rbac.authorization.k8s.io",
        "validatingadmissionpolicy.admissionregistration.k8s.io",
    } <= kinds, proc.stdout
