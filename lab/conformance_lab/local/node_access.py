"""NodeAccess for the local cluster: node directories are host paths; kubelet restart through the handle."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.core.handles import ClusterHandle, RestartsKubelet
from conformance.node import cdi_identity, crilog, draplugin, registration
from conformance.node.base import NodeAccessUnavailable
from conformance.node.podresources import PodResourcesClient

STANDARD_KUBELET_DIR = "/var/lib/kubelet/"


def host_path(node, path: str) -> str:
    """A path the node's kubelet uses, as this host sees it: under ``daemonset_paths`` the kubelet runs with
    ``--root-dir=/var/lib/kubelet`` in the node's mount namespace (its ``kubelet_root_dir`` on the host), so
    plugin endpoints advertised there are mapped; other paths are host paths already."""
    if path.startswith(STANDARD_KUBELET_DIR) and str(node.kubelet_root_dir) != STANDARD_KUBELET_DIR.rstrip("/"):
        return str(Path(node.kubelet_root_dir) / path[len(STANDARD_KUBELET_DIR) :])
    return path


class LocalNodeAccess:
    """Reads CDI specs and sockets from the local nodes' host paths (HostNode fields); restarts kubelets when
    the cluster handle can (RestartsKubelet)."""

    mode = "local"

    def __init__(self, cluster: ClusterHandle) -> None:
        self.cluster = cluster
        self._nodes = {n.name: n for n in cluster.nodes}

    def _node(self, name: str):  # a LocalNode: HostNode fields plus kubeconfig (its dir holds pod-logs)
        if name not in self._nodes:
            raise NodeAccessUnavailable(f"node {name!r} is not a local node ({sorted(self._nodes)})")
        return self._nodes[name]

    def probe(self) -> tuple[bool, str]:
        """Available when every node's plugin registry directory exists on this host."""
        missing = [n.name for n in self._nodes.values() if not Path(n.plugin_registry_dir).is_dir()]
        if missing:
            return False, f"plugin registry dirs missing on host for nodes {missing}"
        return True, f"local cluster host paths for nodes {sorted(self._nodes)}"

    def cdi_specs(self, node: str) -> dict[str, str]:
        """CDI spec files (``*.json``, ``*.yaml``) in the node's CDI directory."""
        directory, out = Path(self._node(node).cdi_dir), {}
        for p in sorted(directory.glob("*")):
            if p.suffix in (".json", ".yaml", ".yml"):
                try:
                    out[p.name] = p.read_text(errors="replace")
                except (FileNotFoundError, IsADirectoryError):  # removed meanwhile: another claim's unprepare
                    continue
        return out

    def plugin_sockets(self, node: str) -> list[str]:
        """Entries of the node's kubelet plugin registry directory."""
        return sorted(p.name for p in Path(self._node(node).plugin_registry_dir).iterdir())

    def plugin_info(self, node: str) -> list[dict]:
        """GetInfo answers of every socket in the node's plugin registry (see
        :func:`conformance.node.registration.plugins_in`)."""
        return registration.plugins_in(self._node(node).plugin_registry_dir)

    def pod_resources(self, node: str) -> PodResourcesClient:
        """A client for the node's PodResources socket."""
        return PodResourcesClient(self._node(node).pod_resources_socket)

    def dra_plugin(self, node: str, driver: str) -> draplugin.DraPluginClient:
        """A client of ``driver``'s DRAPlugin service on ``node``: the endpoint and service version its
        registration GetInfo advertises (node paths are host paths here). Raises DraPluginError when no plugin
        of that driver is registered on the node."""
        socket, version = draplugin.endpoint_of(self.plugin_info(node), driver, node)
        socket = host_path(self._node(node), socket)
        return draplugin.DraPluginClient(socket, version, driver=driver, node=node)

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str:
        """A container's output read from the node's CRI log files (``<pod logs dir>/<ns>_<pod>_<uid>/<ctr>/*.log``,
        lines ``<time> <stream> <tag> <text>``). Raises NodeAccessUnavailable when there is no such log."""
        logs_dir = Path(
            crilog.log_dir(
                namespace, pod, uid, container, root=str(Path(self._node(node).kubeconfig).parent / "pod-logs")
            )
        )
        files = sorted(logs_dir.glob("*.log"))
        if not files:
            raise NodeAccessUnavailable(f"no CRI log files in {logs_dir}")
        return crilog.output(files[-1].read_text(errors="replace"))

    def restart_kubelet(self, node: str) -> None:
        """Restart the node's kubelet through the local cluster handle; NodeAccessUnavailable when it cannot."""
        if not isinstance(self.cluster, RestartsKubelet):
            raise NodeAccessUnavailable(self.can_restart_kubelet()[1])
        self.cluster.restart_kubelet(self._node(node).name)

    def can_restart_kubelet(self) -> tuple[bool, str]:
        """``(able, evidence)``: whether the cluster handle restarts kubelets."""
        ok = isinstance(self.cluster, RestartsKubelet)
        return ok, "local cluster handle restarts kubelets" if ok else "cluster handle has no restart_kubelet"

    def device_numbers(self, node: str, paths: list[str]) -> dict[str, str]:
        """``{path: "c 1:3"}`` of the device nodes at ``paths`` (host paths: the local nodes' runtime uses this
        host's /dev; a path that does not exist is left out; StatsNodeDevices)."""
        self._node(node)
        out = {}
        for path in paths:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            out[path] = cdi_identity.device_number(st.st_mode, st.st_rdev)
        return out
