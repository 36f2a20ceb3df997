"""The cluster the existing-cluster e2e tests share: `dra-conformance install` brings up a 2-node local cluster
with the reference driver installed from its Helm chart (a DaemonSet) and leaves it running, as a cluster admin
would; every module of this package uses it, and it is removed after the package's last test."""

from __future__ import annotations

import re

import pytest

from conformance.k8s.client import K8s
from tests.e2e.existing.common import _cli


@pytest.fixture(scope="package")
def installed(local_cluster):
    """(kubeconfig, k8s): a local cluster with the reference chart installed, removed at the end. Started after the
    shared cluster (``local_cluster``), which then keeps the host's kube-proxy when tests run on xdist workers."""
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
