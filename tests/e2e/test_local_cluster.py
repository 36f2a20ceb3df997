"""End-to-end tests of the `local` cluster provider against real processes (etcd, kube-apiserver,
controller-manager, scheduler, kube-proxy, containerd 2 + runc + CNI, kubelets).

Sources: local-cluster.md §3 (start order, readiness), feature-catalog.md §1.2 (resource.k8s.io versions
served per release), KEP-3695 (PodResources socket), NodeRestriction admission.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig, gates, hostsys
from conformance_lab.local import api as apilib
from conformance_lab.local.config import layout_for
from conformance_lab.local.provider import free_slot
from conformance_lab.local.teardown import leftovers, other_kube_proxy
from conformance_lab.toolchain import cache
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from conformance.core.errors import ClusterUnavailable
from tests.e2e import kube
from tests.e2e.conftest import K8S_VERSION, REPO

pytestmark = pytest.mark.e2e
PROXY_CHAINS = ("KUBE-SERVICES", "KUBE-SVC-", "KUBE-SEP-", "KUBE-POSTROUTING", "KUBE-PROXY-", "KUBE-NODEPORTS")


def _api(handle) -> apilib.Api:
    pki = handle.kubeconfig.parent / "pki"
    return apilib.Api(handle.server, pki / "ca.crt", pki / "admin.crt", pki / "admin.key")


@pytest.mark.cluster_lifecycle
def test_lifecycle_pods_run_on_both_nodes_and_down_leaves_nothing():
    """A fresh 2-node cluster (release-default gates, one kwok node) runs a pod from the offline image on each
    real node; kwok leaves the real kubelets' Nodes alone; restart_kubelet brings a node back Ready with a
    new kubelet; `cluster down` from another process leaves no
    process, mount, interface, cgroup, CNI chain or directory behind."""
    # given: a cluster of its own (a free slot from 1, the lifecycle slot: own ports/subnets; kube-proxy only if no
    # other cluster runs, as in make test-alone)
    alone = not other_kube_proxy("e2elife")
    cfg = LocalClusterConfig(
        name="e2elife",
        nodes=2,
        kwok_nodes=1,
        feature_gates="defaults",
        slot=free_slot(first=1),
        kube_proxy=alone,
        k8s_version=K8S_VERSION,
        log_dir=REPO / "reports" / "e2e-logs" / "e2elife",
    )
    cluster = LocalCluster(cfg, progress=print)
    handle = cluster.up()
    procs = handle.host_processes()
    try:
        # when: a pod runs on each node; the API serves only v1 of resource.k8s.io by default
        api = kube.core_api(handle)
        ns = kube.namespace(api, "life")
        kube.wait_default_sa(api, ns)
        logs = kube.run_on_each_node(api, handle, ns, "echo hello from $(hostname)")
        assert apilib.served_versions(_api(handle), "resource.k8s.io") == ["v1"]
        kubelets = {n.metadata.name: n.status.node_info.kubelet_version for n in api.list_node().items}
        kube.delete_namespace(api, ns)
        old_kubelet = next(p.pid for p in procs if p.name == "kubelet" and p.node == "e2elife-node-1")
        handle.restart_kubelet("e2elife-node-1")  # disruptive: only on this test's own cluster
        new_kubelet = next(p.pid for p in handle.host_processes() if p.name == "kubelet" and p.node == "e2elife-node-1")
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "cluster", "down", "--name", "e2elife"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if down.returncode:
            cluster.down()
    # then: both pods printed, kwok faked only its own node, `cluster down` (another process) left nothing
    assert down.returncode == 0, down.stdout + down.stderr
    assert new_kubelet != old_kubelet
    assert kubelets == {
        "e2elife-node-0": handle.k8s_version,
        "e2elife-node-1": handle.k8s_version,
        "e2elife-kwok-0": "fake",
    }, kubelets
    assert logs == {n: f"hello from p-{i}\n" for i, n in enumerate(["e2elife-node-0", "e2elife-node-1"])}, logs
    assert not [p.name for p in procs if p.is_running()]
    assert leftovers("e2elife", layout_for(cfg), [layout_for(cfg).bridge(i) for i in range(2)]) == []
    if alone:
        assert hostsys.iptables_chains(PROXY_CHAINS) == [], "kube-proxy chains left"


def test_pods_on_each_node_reach_the_api_server_through_the_kubernetes_service(local_cluster):
    """Pods on both nodes get IPs from their node's pod subnet and reach kube-apiserver via the ClusterIP of
    the `kubernetes` Service (kube-proxy iptables DNAT): an HTTP request to its TLS port gets the Go HTTPS
    server's answer."""
    assert local_cluster.kube_proxy, "kube-proxy is not running: another local cluster on this host holds it"
    api = kube.core_api(local_cluster)
    ns = kube.namespace(api, "svc")
    try:
        kube.wait_default_sa(api, ns)
        script = (
            "echo host=$KUBERNETES_SERVICE_HOST; printf 'GET /readyz HTTP/1.0\\r\\n\\r\\n' | "
            "nc -w 10 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT"
        )
        logs = kube.run_on_each_node(api, local_cluster, ns, script, prefix="svc")
        ips = {p.spec.node_name: p.status.pod_ip for p in api.list_namespaced_pod(ns).items}
    finally:
        kube.delete_namespace(api, ns)
    for i, node in enumerate(local_cluster.nodes):
        assert ips[node.name].startswith(f"10.88.{i}."), ips
        assert f"host={local_cluster.service_ip}" in logs[node.name], logs
        assert "Client sent an HTTP request to an HTTPS server" in logs[node.name], logs


def test_all_mode_serves_every_resource_version_of_the_release(local_cluster):
    """feature_gates=all: discovery lists v1 plus the alpha/beta versions the release serves, and every DRA
    gate the binary lists is enabled in the running kube-apiserver (/metrics kubernetes_feature_enabled)."""
    api = _api(local_cluster)
    served = apilib.served_versions(api, "resource.k8s.io")
    assert set(served) == set(gates.served_versions("all", local_cluster.k8s_version)), served
    known = gates.binary_gates(cache.k8s_binary("kube-apiserver", local_cluster.k8s_version))
    dra = sorted(name for name in known if name.startswith("DRA"))
    status, metrics = api.request("GET", "/metrics")
    enabled = set(re.findall(r'kubernetes_feature_enabled\{name="(\w+)",stage="\w*"\} 1', metrics))
    assert status == 200 and dra and set(dra) <= enabled, sorted(set(dra) - enabled)
    assert all(local_cluster.feature_gates[name] for name in dra), local_cluster.feature_gates


def test_node_paths_exist_and_node_credentials_are_restricted(local_cluster):
    """Each node exposes its PodResources socket and plugin dirs; its kubeconfig is system:node:<name>,
    so NodeRestriction refuses changes to another node."""
    n0, n1 = local_cluster.nodes
    for node in (n0, n1):
        assert node.pod_resources_socket.is_socket(), node
        assert node.plugin_registry_dir.is_dir() and node.plugins_dir.is_dir() and node.cdi_dir.is_dir()
    node_api = client.CoreV1Api(config.new_client_from_config(config_file=str(n0.kubeconfig)))
    node_api.patch_node(n0.name, {"metadata": {"annotations": {"dra-conformance.test/probe": "1"}}})
    with pytest.raises(ApiException) as err:
        node_api.patch_node(n1.name, {"metadata": {"annotations": {"dra-conformance.test/probe": "1"}}})
    assert err.value.status == 403, err.value


def test_host_process_is_recorded_and_stopped(local_cluster):
    """start_host_process runs a process for a node, logs to <log_dir>/<node>-<name>.log, and stop() ends it."""
    node = local_cluster.nodes[0].name
    proc = local_cluster.start_host_process(node, "echo-probe", ["sh", "-c", "echo started; sleep 60"])
    try:
        assert proc.is_running()
        assert any(p.pid == proc.pid for p in local_cluster.host_processes())
        deadline = time.monotonic() + 30  # a loaded host may take seconds to start sh
        while "started" not in proc.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "started" in proc.log_path.read_text()
        assert proc.log_path == local_cluster.log_dir / f"{node}-echo-probe.log"
    finally:
        proc.stop(timeout=2)
    assert not proc.is_running()


@pytest.mark.cluster_lifecycle
def test_failed_bring_up_names_the_component_and_leaves_nothing():
    """An unknown feature gate makes kube-apiserver exit: up() raises ClusterUnavailable quoting its log
    ("unrecognized feature gate") and tears down everything it had started."""
    # given: a config whose gate the binary does not know
    cfg = LocalClusterConfig(
        name="e2ebad",
        nodes=1,
        feature_gates="defaults",
        slot=free_slot(first=1),
        kube_proxy=False,
        k8s_version=K8S_VERSION,
        extra_feature_gates={"NoSuchDRAGate": True},
        log_dir=REPO / "reports" / "e2e-logs" / "e2ebad",
    )
    # when: it is brought up
    with pytest.raises(ClusterUnavailable) as err:
        LocalCluster(cfg, progress=print).up()
    # then: the error names the component and the gate, and nothing is left
    assert "kube-apiserver exited" in str(err.value) and "NoSuchDRAGate" in str(err.value), err.value
    assert leftovers("e2ebad", layout_for(cfg), [layout_for(cfg).bridge(0)]) == []
