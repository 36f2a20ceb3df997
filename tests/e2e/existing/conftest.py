"""The cluster the existing-cluster e2e tests share: `dra-conformance install` brings up a 2-node local cluster
with the reference driver installed from its Helm chart (a DaemonSet) and leaves it running, as a cluster admin
would; every module of this package uses it, and it is removed after the package's last test."""

from __future__ import annotations

import pytest

from tests.e2e.existing.common import installed_reference


@pytest.fixture(scope="package")
def installed(local_cluster):
    """(kubeconfig, k8s): a local cluster with the reference chart installed, removed at the end. Started after the
    shared cluster (``local_cluster``), which then keeps the host's kube-proxy when tests run on xdist workers."""
    with installed_reference() as got:
        yield got
