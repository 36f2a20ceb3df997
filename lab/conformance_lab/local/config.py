"""LocalClusterConfig: what a `local` cluster looks like, validated once; and the derived layout
(directories, ports, pod subnets, bridge names) every other module of the package reads.

Port and subnet plan (``slot`` s lets a second cluster coexist on one host; every port is checked free by
the pre-flight): apiserver ``6443+s``; ``base = 20000 + 100*s``: etcd client ``base``, etcd peer ``base+1``,
kube-controller-manager ``base+2``, kube-scheduler ``base+3``, kube-proxy healthz/metrics ``base+4/5``,
kwok ``base+6``, kubelet i: port ``base+10+2i``, healthz ``base+11+2i``. Pod subnet of node i
``10.88.<16s+i>.0/24``; Service CIDR ``10.0.<s>.0/24`` (the ``kubernetes`` Service gets ``10.0.<s>.1``).
Network namespaces (``netns``): the control plane's bridge ``10.201.<s>.1/24``, node i ``10.201.<s>.<10+i>``;
only the API server, controller-manager and scheduler ports are forwarded to the host's loopback, the other
ports live inside the namespaces.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

from conformance.core.errors import ConfigError

FEATURE_GATE_MODES = ("defaults", "all")
STATE_ROOT = Path("/var/lib/dra-conformance/clusters")
RUN_ROOT = Path("/run/dra-conformance")
DEFAULT_LOG_ROOT = Path("reports/cluster-logs")
MAX_NODES = 8
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,15}$")


@dataclasses.dataclass(frozen=True)
class LocalClusterConfig:
    """Options of one local cluster.

    name: DNS-label-like, 1-16 chars (node names are ``<name>-node-<i>``); nodes: real kubelet nodes
    (1..8); kwok_nodes: extra fake nodes run by kwok (0..100); k8s_version: ``1.35`` / ``v1.35.4`` or None
    for the pinned default; feature_gates: ``defaults`` or ``all`` (every DRA gate of the release on, plus
    the alpha/beta ``resource.k8s.io`` versions); log_dir: where component logs go (default
    ``reports/cluster-logs/<name>``); slot: 0..9, offsets ports and subnets so two clusters can coexist;
    kube_proxy: run one kube-proxy per node, each in its node's network namespace (None or True; False = none:
    Service ClusterIPs then do not work; ignored with ``daemonset_paths``, whose DaemonSets need the
    ``kubernetes`` Service); images: override
    of the image references (``busybox``, ``pause``); daemonset_paths: run each node's containerd and kubelet
    in a mount namespace where the node's directories appear at ``/var/lib/kubelet``, ``/var/run/cdi`` and
    ``/etc/cdi``, so a driver chart's DaemonSet works unchanged (``node_mounts``; off: host processes only);
    registry_mirror: ``127.0.0.1:PORT`` of a loopback registry (conformance_lab.registry) every node's containerd
    pulls through (hosts.toml mirrors of docker.io, registry.k8s.io, dra-conformance.local and of itself); the
    harness then imports no image at all, not even pause or busybox (empty: the offline images are imported);
    timeouts in seconds.
    Raises ConfigError (field + fix) from :meth:`validate`.
    """

    name: str = "dra"
    nodes: int = 2
    kwok_nodes: int = 0
    k8s_version: str | None = None
    feature_gates: str = "all"
    log_dir: Path | None = None
    slot: int = 0
    kube_proxy: bool | None = None
    images: dict[str, str] = dataclasses.field(default_factory=dict)
    registry_mirror: str = ""
    ready_timeout: float = 120.0
    extra_feature_gates: dict[str, bool] = dataclasses.field(default_factory=dict)
    extra_args: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Flags appended to a component's command line, by process name (``kube-scheduler``, ``kube-controller-
    manager``...), e.g. the benchmark's client QPS."""
    daemonset_paths: bool = False
    nri: bool = False
    """Enable containerd's NRI on every node, each on its own socket ``<node run dir>/nri/nri.sock`` (NRI
    plugins such as dranet; conformance_lab.local.netdevs)."""

    def validate(self) -> LocalClusterConfig:
        """Check every field; returns self. Raises ConfigError naming the field and the fix."""
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(
                f"cluster name {self.name!r} is not valid",
                field="name",
                fix="use 1-16 lowercase letters, digits or '-', starting with a letter",
            )
        for field, value, low, high in (
            ("nodes", self.nodes, 1, MAX_NODES),
            ("kwok_nodes", self.kwok_nodes, 0, 100),
            ("slot", self.slot, 0, 9),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(
                    f"{field}={value!r} is out of range", field=field, fix=f"use an integer from {low} to {high}"
                )
        if self.feature_gates not in FEATURE_GATE_MODES:
            raise ConfigError(
                f"feature-gate mode {self.feature_gates!r} is unknown",
                field="feature_gates",
                fix=f"use one of: {', '.join(FEATURE_GATE_MODES)}",
            )
        unknown = set(self.images) - {"busybox", "pause"}
        if unknown:
            raise ConfigError(f"unknown image names {sorted(unknown)}", field="images", fix="use busybox, pause")
        if self.ready_timeout <= 0:
            raise ConfigError("ready_timeout must be positive", field="ready_timeout", fix="e.g. 120")
        if self.registry_mirror and not re.fullmatch(r"(127\.\d+\.\d+\.\d+|localhost):\d{1,5}", self.registry_mirror):
            raise ConfigError(
                f"registry_mirror {self.registry_mirror!r} is not a loopback HOST:PORT",
                field="registry_mirror",
                fix="the address of a lab registry, e.g. 127.0.0.1:5000 (conformance_lab.registry.server)",
            )
        return self


@dataclasses.dataclass(frozen=True)
class Layout:
    """Derived paths and ports of one cluster (pure function of name and slot)."""

    name: str
    slot: int
    nodes: int
    log_dir: Path

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def run_dir(self) -> Path:
        return RUN_ROOT / self.name

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"

    @property
    def pki_dir(self) -> Path:
        return self.state_dir / "pki"

    @property
    def base_port(self) -> int:
        return 20000 + 100 * self.slot

    @property
    def apiserver_port(self) -> int:
        return 6443 + self.slot

    @property
    def etcd_port(self) -> int:
        return self.base_port

    @property
    def etcd_peer_port(self) -> int:
        return self.base_port + 1

    @property
    def kcm_port(self) -> int:
        return self.base_port + 2

    @property
    def scheduler_port(self) -> int:
        return self.base_port + 3

    @property
    def proxy_healthz_port(self) -> int:
        return self.base_port + 4

    @property
    def proxy_metrics_port(self) -> int:
        return self.base_port + 5

    @property
    def kwok_port(self) -> int:
        return self.base_port + 6

    def forwarded_ports(self) -> dict[str, int]:
        """Component -> port served on the host's 127.0.0.1 by the cluster's forwarder (``netns``)."""
        return {
            "kube-apiserver": self.apiserver_port,
            "kube-controller-manager": self.kcm_port,
            "kube-scheduler": self.scheduler_port,
        }

    @property
    def bridge_ip(self) -> str:
        """The control plane's address on the cluster bridge (API server advertise address)."""
        return f"10.201.{self.slot}.1"

    def node_ip(self, i: int) -> str:
        """Node i's address (its ``eth0`` in its network namespace, on the cluster bridge)."""
        return f"10.201.{self.slot}.{10 + i}"

    def kubelet_port(self, i: int) -> int:
        return self.base_port + 10 + 2 * i

    def kubelet_healthz_port(self, i: int) -> int:
        return self.base_port + 11 + 2 * i

    def all_ports(self) -> dict[str, int]:
        """Component -> TCP port, for the free-port pre-flight."""
        ports = {
            "kube-apiserver": self.apiserver_port,
            "etcd": self.etcd_port,
            "etcd-peer": self.etcd_peer_port,
            "kube-controller-manager": self.kcm_port,
            "kube-scheduler": self.scheduler_port,
            "kube-proxy-healthz": self.proxy_healthz_port,
            "kube-proxy-metrics": self.proxy_metrics_port,
            "kwok": self.kwok_port,
        }
        for i in range(self.nodes):
            ports[f"kubelet-{i}"] = self.kubelet_port(i)
            ports[f"kubelet-{i}-healthz"] = self.kubelet_healthz_port(i)
        return ports

    @property
    def service_cidr(self) -> str:
        return f"10.0.{self.slot}.0/24"

    @property
    def service_ip(self) -> str:
        """ClusterIP of the ``kubernetes`` Service (first address of the Service CIDR)."""
        return f"10.0.{self.slot}.1"

    @property
    def cluster_cidr(self) -> str:
        return f"10.88.{16 * self.slot}.0/20"

    def pod_subnet(self, i: int) -> str:
        return f"10.88.{16 * self.slot + i}.0/24"

    def node_name(self, i: int) -> str:
        return f"{self.name}-node-{i}"

    def node_dir(self, i: int) -> Path:
        return self.state_dir / f"node-{i}"

    def node_run_dir(self, i: int) -> Path:
        return self.run_dir / f"node-{i}"

    def bridge(self, i: int) -> str:
        """Linux bridge name of node i (<= 15 chars, unique per cluster name)."""
        return f"dc{hashlib.sha256(self.name.encode()).hexdigest()[:6]}n{i}"

    def cni_network(self, i: int) -> str:
        return f"dra-{self.name}-{i}"

    def cgroup_root(self, i: int) -> str:
        """The kubelet's cgroupRoot (its kubepods hierarchy lives below it)."""
        return f"/dra-{self.name}-node-{i}"


def layout_for(cfg: LocalClusterConfig) -> Layout:
    """The Layout of a validated config (log_dir made absolute)."""
    log_dir = Path(cfg.log_dir) if cfg.log_dir else DEFAULT_LOG_ROOT / cfg.name
    return Layout(name=cfg.name, slot=cfg.slot, nodes=cfg.nodes, log_dir=log_dir.absolute())
