"""Command lines of the control-plane components: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kube-proxy, kwok. Pure functions of the layout, PKI paths and gates (no process starts).

Flags: local-cluster.md §2.2, §3.2-3.4, §3.6, §4.3 (upstream hack/local-up-cluster.sh and hack/lib/etcd.sh).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from conformance_lab.local import gates as gatelib
from conformance_lab.local.config import Layout
from conformance_lab.local.pki import Pki


def etcd(bin_: str, lay: Layout) -> list[str]:
    """etcd on 127.0.0.1:<etcd_port>, data under the state dir, no fsync (disposable data)."""
    return [
        bin_,
        "--name=default",
        f"--data-dir={lay.state_dir / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{lay.etcd_port}",
        f"--advertise-client-urls=http://127.0.0.1:{lay.etcd_port}",
        f"--listen-peer-urls=http://127.0.0.1:{lay.etcd_peer_port}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{lay.etcd_peer_port}",
        f"--initial-cluster=default=http://127.0.0.1:{lay.etcd_peer_port}",
        "--log-level=warn",
        "--unsafe-no-fsync",
        "--quota-backend-bytes=2147483648",
    ]


def apiserver(bin_: str, lay: Layout, pki: Pki, node_ip: str, gates: dict[str, bool], runtime_config: str) -> list[str]:
    """kube-apiserver with TLS from our CA, Node,RBAC authorization and NodeRestriction admission."""
    argv = [
        bin_,
        f"--etcd-servers=http://127.0.0.1:{lay.etcd_port}",
        "--bind-address=0.0.0.0",
        f"--secure-port={lay.apiserver_port}",
        f"--advertise-address={node_ip}",
        f"--tls-cert-file={pki.cert('apiserver')}",
        f"--tls-private-key-file={pki.key('apiserver')}",
        f"--client-ca-file={pki.ca_cert}",
        f"--kubelet-client-certificate={pki.cert('apiserver-kubelet-client')}",
        f"--kubelet-client-key={pki.key('apiserver-kubelet-client')}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={lay.service_cidr}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--cert-dir={lay.state_dir / 'apiserver-certs'}",
        "--profiling=false",
        "--v=1",
    ]
    if gates:
        argv.append(f"--feature-gates={gatelib.flag_value(gates)}")
    if runtime_config:
        argv.append(f"--runtime-config={runtime_config}")
    return argv


def controller_manager(bin_: str, lay: Layout, pki: Pki, kubeconfig: Path, gates: dict[str, bool]) -> list[str]:
    """kube-controller-manager: every controller ('*'), root CA published as kube-root-ca.crt."""
    argv = [
        bin_,
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--root-ca-file={pki.ca_cert}",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={lay.service_cidr}",
        f"--cluster-signing-cert-file={pki.ca_cert}",
        f"--cluster-signing-key-file={pki.ca_key}",
        "--controllers=*",
        "--leader-elect=false",
        "--allocate-node-cidrs=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={lay.kcm_port}",
        f"--cert-dir={lay.state_dir / 'kcm-certs'}",
        "--v=1",
    ]
    if gates:
        argv.append(f"--feature-gates={gatelib.flag_value(gates)}")
    return argv


def scheduler(bin_: str, lay: Layout, kubeconfig: Path, gates: dict[str, bool]) -> list[str]:
    """kube-scheduler with the default profile (DynamicResources plugin on whenever DRA is)."""
    argv = [
        bin_,
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=true",  # as kubeadm runs it: its Lease kube-system/kube-scheduler shows it alive
        "--bind-address=127.0.0.1",
        f"--secure-port={lay.scheduler_port}",
        f"--cert-dir={lay.state_dir / 'scheduler-certs'}",
        "--v=1",
    ]
    if gates:
        argv.append(f"--feature-gates={gatelib.flag_value(gates)}")
    return argv


def kube_proxy(bin_: str, lay: Layout, kubeconfig: Path, i: int) -> list[str]:
    """kube-proxy of node i (run in the node's network namespace, netns.py) in iptables mode; conntrack settings
    left alone (``nf_conntrack_max`` is host-wide) and NodePorts not served on 127.0.0.1 (with
    ``iptables.localhostNodePorts`` on, its default, kube-proxy sets ``net.ipv4.conf.all.route_localnet=1``:
    proxier.go "Setting route_localnet=1"). Writes its config ``kube-proxy-<i>.yaml``."""
    cfg = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": lay.node_name(i),
        "mode": "iptables",
        "clusterCIDR": lay.cluster_cidr,
        "bindAddress": "0.0.0.0",
        "healthzBindAddress": f"127.0.0.1:{lay.proxy_healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{lay.proxy_metrics_port}",
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }
    path = lay.state_dir / f"kube-proxy-{i}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return [bin_, f"--config={path}", "--v=1"]


def kwok(bin_: str, lay: Layout, kubeconfig: Path, node_ip: str) -> list[str]:
    """kwok managing only nodes annotated ``kwok.x-k8s.io/node=fake`` (never the real kubelets)."""
    stages = Path(__file__).with_name("kwok-stages.yaml")
    return [
        bin_,
        f"--kubeconfig={kubeconfig}",
        f"--config={stages}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--node-ip={node_ip}",
        "--node-lease-duration-seconds=40",
        f"--server-address=127.0.0.1:{lay.kwok_port}",
    ]
