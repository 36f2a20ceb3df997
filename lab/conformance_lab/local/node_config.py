"""Per-node configuration: containerd 2 (config version 3), the CNI bridge network, the kubelet.

Each node gets its own containerd root/state/socket, CDI spec dir, CNI conf dir, bridge and pod subnet,
kubelet root dir, ports and cgroupRoot, so several kubelets share one host without fighting.
Sources: local-cluster.md §3.5, §3.6, §5.2; containerd docs/cri/config.md (v3 keys);
kubelet config/v1beta1 types.go (failCgroupV1, podLogsDir, cgroupRoot).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from conformance_lab.local.config import Layout


@dataclasses.dataclass(frozen=True)
class NodePaths:
    """Host paths of node ``index`` (see LocalNode for the public subset)."""

    index: int
    name: str
    dir: Path
    run_dir: Path

    @property
    def kubelet_root(self) -> Path:
        return self.dir / "kubelet"

    @property
    def containerd_root(self) -> Path:
        return self.dir / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.run_dir / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "containerd.sock"

    @property
    def cdi_dir(self) -> Path:
        return self.run_dir / "cdi"

    @property
    def nri_dir(self) -> Path:
        """The directory of this node's NRI socket ``nri.sock`` (when the cluster runs with ``nri``)."""
        return self.run_dir / "nri"

    @property
    def cni_conf_dir(self) -> Path:
        return self.dir / "cni-conf"

    @property
    def pod_logs_dir(self) -> Path:
        return self.dir / "pod-logs"

    @property
    def kubeconfig(self) -> Path:
        """The node's credentials (``system:node:<name>``) for use on the host: the forwarded 127.0.0.1 server."""
        return self.dir / "kubelet.kubeconfig"

    @property
    def kubelet_kubeconfig(self) -> Path:
        """The same credentials for the kubelet in the node's network namespace: the API server's bridge address."""
        return self.dir / "kubelet-in-node.kubeconfig"


def node_paths(lay: Layout, i: int) -> NodePaths:
    return NodePaths(index=i, name=lay.node_name(i), dir=lay.node_dir(i), run_dir=lay.node_run_dir(i))


def nri_toml(np: NodePaths, enabled: bool) -> str:
    """The NRI section of node ``np``'s containerd config: off, or on with this node's own socket, plugin and
    plugin-config directories (containerd docs/NRI.md: ``disable``, ``socket_path``, ``plugin_path``,
    ``plugin_config_path``), so nodes never share the host-wide defaults (/var/run/nri/nri.sock, /opt/nri)."""
    if not enabled:
        return "[plugins.'io.containerd.nri.v1.nri']\n  disable = true\n"
    return (
        "[plugins.'io.containerd.nri.v1.nri']\n"
        "  disable = false\n"
        f"  socket_path = '{np.nri_dir / 'nri.sock'}'\n"
        f"  plugin_path = '{np.dir / 'nri' / 'plugins'}'\n"
        f"  plugin_config_path = '{np.dir / 'nri' / 'conf.d'}'\n"
    )


MIRRORED_HOSTS = ("docker.io", "registry.k8s.io", "dra-conformance.local")


def registry_hosts(np: NodePaths, mirror: str) -> Path:
    """Write ``<node>/certs.d/<host>/hosts.toml`` for each of :data:`MIRRORED_HOSTS` and ``mirror`` itself, each
    resolving and pulling only from ``http://<mirror>`` (a loopback registry, no TLS; no fall-back to the
    upstream host); return the ``certs.d`` directory (containerd's registry ``config_path``). Source: containerd
    docs/hosts.md (``server``, ``[host."..."] capabilities``)."""
    return write_hosts(np.dir / "certs.d", mirror)


def write_hosts(root: Path, mirror: str) -> Path:
    """Write ``root/<host>/hosts.toml`` for each of :data:`MIRRORED_HOSTS` and ``mirror`` (``HOST:PORT``) itself,
    each pulling and resolving only from ``http://<mirror>``; return ``root``. Used for local nodes
    (:func:`registry_hosts`) and kind nodes (conformance_lab.kind.mirror, mounted at /etc/containerd/certs.d)."""
    for host in (*MIRRORED_HOSTS, mirror):
        (root / host).mkdir(parents=True, exist_ok=True)
        (root / host / "hosts.toml").write_text(
            f'server = "http://{mirror}"\n\n[host."http://{mirror}"]\n  capabilities = ["pull", "resolve"]\n'
        )
    return root


def containerd_config(
    np: NodePaths, runc: str, cni_bin_dir: str, pause_ref: str, nri: bool = False, mirror: str = ""
) -> Path:
    """Write the node's containerd config.toml (version 3) and return its path.

    CDI on with only this node's spec dir; restrict_oom_score_adj (no CAP_SYS_RESOURCE on the target VM);
    runc from Debian; cgroupfs; netns mounts under the state dir; NRI off unless ``nri`` (then on this node's
    own socket, :func:`nri_toml`); with ``mirror`` (``127.0.0.1:PORT``) images are pulled through that registry
    (:func:`registry_hosts`).
    """
    registry = (
        f"  [plugins.'io.containerd.cri.v1.images'.registry]\n    config_path = '{registry_hosts(np, mirror)}'\n"
        if mirror
        else ""
    )
    toml = f"""version = 3
root = '{np.containerd_root}'
state = '{np.containerd_state}'

[grpc]
  address = '{np.containerd_socket}'

[ttrpc]
  address = '{np.containerd_socket}.ttrpc'

{nri_toml(np, nri)}
[plugins.'io.containerd.internal.v1.opt']
  path = '{np.dir / "opt"}'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '{pause_ref}'
{registry}
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ['{np.cdi_dir}']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '{runc}'
        Root = '{np.run_dir / "runc"}'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['{cni_bin_dir}']
    conf_dir = '{np.cni_conf_dir}'
    max_conf_num = 1
"""
    path = np.dir / "containerd.toml"
    path.write_text(toml)
    return path


def cni_config(lay: Layout, np: NodePaths) -> Path:
    """Write the node's bridge + host-local conflist (own bridge, subnet, IPAM data dir)."""
    conf = {
        "cniVersion": "1.0.0",
        "name": lay.cni_network(np.index),
        "plugins": [
            {
                "type": "bridge",
                "bridge": lay.bridge(np.index),
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": lay.pod_subnet(np.index)}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(np.dir / "cni-ipam"),
                },
            }
        ],
    }
    np.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    path = np.cni_conf_dir / "10-dra-conformance.conflist"
    path.write_text(json.dumps(conf, indent=2))
    return path


def kubelet_config(lay: Layout, np: NodePaths, ca: Path, gates: dict[str, bool]) -> Path:
    """Write the node's KubeletConfiguration (cgroupfs, failCgroupV1 false, own ports/cgroupRoot/logs)."""
    cfg = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "containerRuntimeEndpoint": f"unix://{np.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": lay.cgroup_root(np.index),
        "cgroupsPerQOS": True,
        "failCgroupV1": False,
        "failSwapOn": False,
        "address": "0.0.0.0",
        "port": lay.kubelet_port(np.index),
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": lay.kubelet_healthz_port(np.index),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "clusterDomain": "cluster.local",
        "resolvConf": "/etc/resolv.conf",
        "oomScoreAdj": 0,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "podLogsDir": str(np.pod_logs_dir),
        "volumePluginDir": str(np.dir / "volume-plugins"),
        "staticPodPath": "",
        "maxPods": 110,
        "serializeImagePulls": False,
        "nodeStatusUpdateFrequency": "5s",
        "syncFrequency": "10s",
        "featureGates": dict(gates),
    }
    path = np.dir / "kubelet.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def kubelet_argv(bin_: str, np: NodePaths, config: Path, node_ip: str) -> list[str]:
    """kubelet command line (flags the config file cannot carry)."""
    return [
        bin_,
        f"--config={config}",
        f"--kubeconfig={np.kubelet_kubeconfig}",
        f"--root-dir={np.kubelet_root}",
        f"--cert-dir={np.dir / 'kubelet-pki'}",
        f"--hostname-override={np.name}",
        f"--node-ip={node_ip}",
        "--node-labels=dra-conformance.test/node=real",
        "--v=1",
        "--vmodule=dra_plugin=4",  # its DRAPlugin call lines: conformance.node.kubelet_spans reads them
    ]


def containerd_argv(bin_: str, config: Path) -> list[str]:
    return [bin_, f"--config={config}", "--log-level=warn"]
