"""LocalNode and LocalClusterHandle: what ``LocalCluster.up()`` returns (core.handles ClusterHandle, HostNode,
RunsHostProcesses, RestartsKubelet, RebootsNode,
RestartsControllerManager, HasComponentLogs, LoadsImages)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from conformance.core.commands import signals_deferred
from conformance.core.errors import ClusterUnavailable
from conformance_lab.local import api as apilib
from conformance_lab.local import disrupt, netdevs, netns
from conformance_lab.local import gates as gatelib
from conformance_lab.local.config import Layout
from conformance_lab.local.node_config import node_paths
from conformance_lab.local.processes import HostProcess
from conformance_lab.local.state import ClusterState
from conformance_lab.toolchain.images.ctr import import_image
from conformance_lab.toolchain.images.oci import ImageError


@dataclasses.dataclass(frozen=True)
class LocalNode:
    """One real kubelet node (host paths).

    kubelet_root_dir: the kubelet ``--root-dir``; plugin_registry_dir: ``<root>/plugins_registry`` (DRA
    kubelet plugins put registration sockets here); plugins_dir: ``<root>/plugins`` (``<driver>/dra.sock``);
    pod_resources_socket: ``<root>/pod-resources/kubelet.sock``; cdi_dir: the only dir this node's containerd
    reads CDI specs from; containerd_socket; kubeconfig: node identity ``system:node:<name>``;
    log_dir: where this node's component logs go.
    """

    name: str
    ip: str
    kubelet_root_dir: Path
    plugin_registry_dir: Path
    plugins_dir: Path
    pod_resources_socket: Path
    cdi_dir: Path
    containerd_socket: Path
    kubeconfig: Path
    log_dir: Path


def make_nodes(lay: Layout) -> list[LocalNode]:
    """The real nodes of ``lay`` (each with its own address in its network namespace, netns.py)."""
    nodes = []
    for i in range(lay.nodes):
        np = node_paths(lay, i)
        root = np.kubelet_root
        nodes.append(
            LocalNode(
                name=np.name,
                ip=lay.node_ip(i),
                kubelet_root_dir=root,
                plugin_registry_dir=root / "plugins_registry",
                plugins_dir=root / "plugins",
                pod_resources_socket=root / "pod-resources" / "kubelet.sock",
                cdi_dir=np.cdi_dir,
                containerd_socket=np.containerd_socket,
                kubeconfig=np.kubeconfig,
                log_dir=lay.log_dir,
            )
        )
    return nodes


class LocalClusterHandle:
    """A running local cluster.

    kubeconfig: admin (system:masters); k8s_version: exact tag; feature_gates / runtime_config: what every
    component got; nodes: real kubelet nodes; kwok_nodes: names of fake nodes; images: name -> ref on every
    node; log_dir; server: ``https://127.0.0.1:<port>``; service_ip: ClusterIP of ``kubernetes``;
    kube_proxy: whether this cluster runs kube-proxy (one per node; Service ClusterIPs work only then).
    """

    def __init__(self, state: ClusterState, lay: Layout, api: apilib.Api, kubeconfig: Path) -> None:
        self._state, self._lay, self._api = state, lay, api
        self.name = state.name
        self.kubeconfig = kubeconfig
        self.k8s_version = state.k8s_version
        self.feature_gates: dict[str, bool] = dict(state.feature_gates)
        self.feature_gate_mode = state.feature_gate_mode
        self.runtime_config = state.runtime_config
        self.nodes = make_nodes(lay)
        self.kwok_nodes = list(state.kwok_nodes)
        self.images = dict(state.images)
        self.log_dir = lay.log_dir
        self.server = api.server
        self.service_ip = lay.service_ip
        self.kube_proxy = any(p.name == "kube-proxy" for p in state.processes)

    @property
    def gate_defaults(self) -> dict[str, tuple[str, bool]]:
        """``{gate: (stage, default)}`` of this cluster's release, from its kube-apiserver ``--help`` (cached);
        tells beta gates on by default from those off (metrics give only the stage and the current state)."""
        return gatelib.cached_defaults(self.k8s_version)

    def node(self, name: str) -> LocalNode:
        """The node called ``name``; raises KeyError listing the node names."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in cluster {self.name!r}; nodes: {[n.name for n in self.nodes]}")

    def start_host_process(self, node: str, name: str, argv: list[str], env: dict | None = None) -> HostProcess:
        """Start ``argv`` for ``node`` in the background (own process group), output to
        ``<log_dir>/<node>-<name>.log``, recorded in the cluster state so ``down()`` stops it.
        Raises KeyError for an unknown node, ValueError for a name taken by a running process."""
        self.node(node)
        current = self._state.process(name, node)
        if current and current.is_running():
            raise ValueError(f"a process named {name!r} already runs for node {node} (pid {current.pid})")
        with signals_deferred():  # recorded before an interrupt can act (tear-down stops only recorded ones)
            proc = HostProcess.spawn(name, node, argv, self.log_dir / f"{node}-{name}.log", env=env)
            return self._state.add_process(proc)

    def add_test_netdevs(self, node: str, kind: str, count: int) -> list[str]:
        """Create ``count`` test network interfaces of ``kind`` (``ifb`` | ``veth``) for ``node`` (MakesTestNetdevs;
        names unique to the node and cluster, :mod:`conformance_lab.local.netdevs`), recorded so tear-down
        deletes them. Raises KeyError (unknown node), ValueError (bad kind or count), RuntimeError (``ip``)."""
        return netdevs.create(self._state, self.node(node).name, kind, count)

    def remove_test_netdevs(self, node: str) -> list[str]:
        """Delete ``node``'s test interfaces; returns those still present (inside a pod's namespace)."""
        return netdevs.remove(self._state, self.node(node).name)

    def start_nri_plugin(self, node: str, name: str, argv: list[str], env: dict | None = None) -> HostProcess:
        """:meth:`start_host_process` for an NRI plugin that dials the default socket ``/var/run/nri/nri.sock``:
        it runs where that path is ``node``'s own NRI socket (RunsNriPlugins; netdevs.nri_plugin_argv).
        Raises ClusterUnavailable when the cluster runs without NRI, KeyError, ValueError."""
        if not self._state.host.get("nri"):
            raise ClusterUnavailable(
                f"local cluster {self.name} runs containerd without NRI: the driver profile must set deploy.nri: true"
            )
        np = node_paths(self._lay, [n.name for n in self.nodes].index(self.node(node).name))
        argv = netns.in_node(self._state.processes, np.name, netdevs.nri_plugin_argv(np, argv))
        return self.start_host_process(node, name, argv, env=env)

    def load_images(self, archives: list[Path]) -> list[str]:
        """Import each OCI archive into every real node's containerd (``ctr images import``); returns the
        node names. Raises ClusterUnavailable naming the node and archive that failed."""
        ctr = Path(self._state.binaries.get("ctr", ""))
        for node in self.nodes:
            for archive in archives:
                try:
                    import_image(ctr, node.containerd_socket, archive)
                except (ImageError, OSError) as exc:
                    raise ClusterUnavailable(f"importing {archive} into node {node.name} failed: {exc}") from exc
        return [n.name for n in self.nodes]

    def host_processes(self) -> list[HostProcess]:
        """Every recorded process (components and those from start_host_process)."""
        return list(self._state.processes)

    def can_restart_kubelet(self) -> tuple[bool, str]:
        """``(True, evidence)``: the harness runs every kubelet of this cluster (RestartsKubelet)."""
        return True, f"local cluster {self.name} runs its kubelets as host processes"

    def restart_kubelet(self, node: str, timeout: float = 60.0) -> None:
        """Stop the node's kubelet (SIGTERM), start it again, wait until the node is Ready with a fresh
        heartbeat. Raises WaitTimeout with the node's last conditions and the kubelet's log path, WaitFailed
        when the kubelet exits."""
        proc = self._state.process("kubelet", self.node(node).name)
        if proc is None:
            raise KeyError(f"no kubelet recorded for node {node}")
        before = time.time()
        proc.restart()
        disrupt.wait_node_ready(self._api, node, before, proc, timeout)

    def reboot_node(self, node: str, timeout: float = 120.0) -> list[str]:
        """Emulate a reboot of ``node`` (RebootsNode; :func:`conformance_lab.local.disrupt.reboot_node`):
        its processes stopped, containers killed, its run directory (containerd state, CDI specs) cleared, then
        containerd, kubelet (node Ready within ``timeout`` s) and its driver plugins started again. Returns the
        cleared paths. Raises KeyError, WaitTimeout/WaitFailed naming the component and its log, RuntimeError."""
        return disrupt.reboot_node(self._state, self._lay, self._api, self.node(node).name, timeout)

    def can_reboot_node(self) -> tuple[bool, str]:
        """``(True, evidence)``: the harness runs every process of the nodes (RebootsNode), also the holders of
        their mount namespaces with ``daemonset_paths``."""
        state = getattr(self, "_state", None)
        where = " in mount namespaces of their own" if state is not None and state.host.get("daemonset_paths") else ""
        return True, f"local cluster {self.name} emulates node reboots{where} (processes stopped, node /run cleared)"

    def restart_controller_manager(self, while_stopped: Callable[[], None] | None = None) -> None:
        """Stop kube-controller-manager, run ``while_stopped``, start it again and wait for /healthz
        (RestartsControllerManager; :func:`conformance_lab.local.disrupt.restart_controller_manager`)."""
        disrupt.restart_controller_manager(self._state, self._lay, while_stopped)

    def can_restart_controller_manager(self) -> tuple[bool, str]:
        """``(True, evidence)``: the harness runs kube-controller-manager as a host process."""
        return True, f"local cluster {self.name} runs kube-controller-manager as a host process"
