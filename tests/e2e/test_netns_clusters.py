"""End-to-end: two local clusters at once, each in network namespaces of its own (conformance_lab.local.netns):
each has its own kube-proxy inside its node's namespace, its pods reach its API server through the ``kubernetes``
Service, the host's loopback reaches both API servers, and the host is the same after both are torn down.

Sources: issue 27 §1 (a local cluster in its own network namespace); network_namespaces(7); kube-proxy iptables
mode (KUBE-SERVICES in the nat table of the namespace it runs in).
"""

from __future__ import annotations

import os
import subprocess

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig, hostdiff, hoststate, netns
from conformance_lab.local.provider import free_slot
from conformance_lab.local.state import SlotTaken

from tests.e2e import kube
from tests.e2e.conftest import K8S_VERSION, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.cluster_lifecycle]
NAMES = ("e2ensa", "e2ensb")
NETWORK = ("iptables", "ip6tables", "sysctls", "links", "addresses", "routes")  # other sections: shared-host noise
SERVICE_SCRIPT = (
    "printf 'GET /readyz HTTP/1.0\\r\\n\\r\\n' | nc -w 10 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT; hostname"
)


def _up(name: str) -> LocalCluster:
    """A 1-node cluster on the lowest free slot (another cluster recording it first: the next one)."""
    for _ in range(8):
        cfg = LocalClusterConfig(
            name=name,
            nodes=1,
            feature_gates="defaults",
            slot=free_slot(first=2, exclude=name),
            k8s_version=K8S_VERSION,
            log_dir=REPO / "reports" / "e2e-logs" / name,
        )
        cluster = LocalCluster(cfg, progress=print)
        try:
            cluster.up()
            return cluster
        except SlotTaken:
            continue
    raise AssertionError("no free slot for a test cluster")


def _netns_of(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _kube_chains(pid: int) -> int:
    out = subprocess.run(
        ["nsenter", f"--net=/proc/{pid}/ns/net", "iptables-save", "-t", "nat"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return out.count("KUBE-SERVICES")


def test_two_clusters_each_with_its_own_kube_proxy_and_the_host_unchanged_after():
    """Given a host snapshot, when two clusters run at once and a pod of each (and a hostNetwork pod) asks its API
    server through the Service, then each answers, the hostNetwork pod's hostname is its node's name, each
    kube-proxy runs (with its KUBE-SERVICES rules) in its own node's namespace, not the host's, and after both
    are torn down the host diff is empty."""
    before = hoststate.capture()
    clusters: list[LocalCluster] = []
    try:
        clusters = [_up(n) for n in NAMES]
        seen = {}
        for c in clusters:
            h = c.handle
            proxy = next(p for p in h.host_processes() if p.name == "kube-proxy")
            holder = next(p for p in h.host_processes() if p.name == netns.NODE_HOLDER)
            api = kube.core_api(h)  # through the forwarder on the host's 127.0.0.1
            ns = kube.namespace(api, "netns")
            kube.wait_default_sa(api, ns)
            logs = kube.run_on_each_node(api, h, ns, SERVICE_SCRIPT, prefix="svc")
            on_node = kube.run_on_each_node(api, h, ns, SERVICE_SCRIPT, prefix="hsvc", host_network=True)
            kube.delete_namespace(api, ns)
            seen[c.config.name] = (_netns_of(proxy.pid), _netns_of(holder.pid), _kube_chains(holder.pid), logs, on_node)
    finally:
        for c in clusters:
            c.down()
    after = hoststate.capture()
    host = os.readlink("/proc/self/ns/net")
    for name, (proxy_ns, node_ns, chains, logs, on_node) in seen.items():
        assert proxy_ns == node_ns != host and chains > 0, (name, proxy_ns, node_ns, chains)
        assert "Client sent an HTTP request to an HTTPS server" in logs[f"{name}-node-0"], logs
        # a hostNetwork pod (dra-driver-cpu's) names its node by the hostname and reaches the Service via nat OUTPUT
        assert on_node[f"{name}-node-0"].split()[-1] == f"{name}-node-0", on_node
        assert "Client sent an HTTP request to an HTTPS server" in on_node[f"{name}-node-0"], on_node
    assert len({v[1] for v in seen.values()}) == 2, seen
    changes = hostdiff.diff(before, after)
    ours = [c for c in changes if c.counts and (c.section in NETWORK or any(n in c.line for n in NAMES))]
    assert ours == [], "\n".join(hostdiff.report(before, after, changes))
