"""NodeAccess for kind: ``docker exec`` (or ``nerdctl exec``) into the node containers (node name = container name)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from conformance.node import cdi, cdi_identity, crilog, draplugin, registration
from conformance.node.base import NodeAccessUnavailable
from conformance.node.podresources import PodResourcesClient

CDI_DIRS = ("/var/run/cdi", "/etc/cdi")
REGISTRY = "/var/lib/kubelet/plugins_registry"
PODRESOURCES = "/var/lib/kubelet/pod-resources/kubelet.sock"
UNIX_PATH_MAX = 107  # sun_path is 108 bytes with its terminating NUL (unix(7))


def _short_link(path: str) -> str:
    """A short symlink to ``path`` (connect(2) follows it; only the address is limited to 108 bytes, unix(7)),
    in a temporary directory removed when this process exits."""
    directory = tempfile.mkdtemp(prefix="dra-sock-")
    atexit.register(shutil.rmtree, directory, True)
    os.symlink(path, link := os.path.join(directory, "s"))
    return link


class KindNodeAccess:
    """Runs commands in kind node containers. The kubelet's PodResources and registration sockets and the
    driver's DRA plugin socket are dialled through the node container's root in ``/proc`` when this host runs
    the containers (root on the Docker or containerd host); otherwise ``pod_resources``/``plugin_info``/
    ``dra_plugin`` raise NodeAccessUnavailable."""

    mode = "kind"

    def __init__(self, node_names: list[str], cli: str = "docker", env: dict[str, str] | None = None) -> None:
        self.node_names = list(node_names)
        self.cli, self.env = cli, env  # the container CLI (docker, or nerdctl's path) and its environment

    def _exec(self, node: str, *argv: str) -> str:
        return self._exec_host(self.cli, "exec", node, *argv)

    def probe(self) -> tuple[bool, str]:
        try:
            self._exec(self.node_names[0], "true")
            return True, f"{Path(self.cli).name} exec into kind nodes {self.node_names}"
        except (NodeAccessUnavailable, IndexError, OSError) as exc:
            return False, f"{Path(self.cli).name} exec into kind nodes failed: {exc}"

    def cdi_specs(self, node: str) -> dict[str, str]:
        """CDI spec files of the node's CDI directories, read in one exec (a file removed meanwhile is left out)."""
        return cdi.parse_dump(self._exec(node, "sh", "-c", cdi.dump_script(CDI_DIRS)))

    def plugin_sockets(self, node: str) -> list[str]:
        return sorted(self._exec(node, "ls", REGISTRY).split())

    def _root(self, node: str) -> Path:
        """``/proc/<pid>/root`` of the node container (needs root on the container host). Raises
        NodeAccessUnavailable (with the reason) when that path is not this kind node's root."""
        pid = self._exec_host(self.cli, "inspect", "--format", "{{.State.Pid}}", node).strip()
        root = Path(f"/proc/{pid}/root")
        try:
            if not (root / "kind").is_dir():  # the pid is this kind node's, not a remote daemon's
                raise NodeAccessUnavailable(f"{root} is not kind node {node} (remote Docker daemon?)")
        except OSError as exc:
            raise NodeAccessUnavailable(
                f"kind node {node}'s root is not reachable as {root}: {exc} (run as root)"
            ) from exc
        return root

    def plugin_info(self, node: str) -> list[dict]:
        """GetInfo answers of the node's registration sockets, dialled from this host through the node
        container's root (``/proc/<pid>/root``): needs root on the container host itself. Raises
        NodeAccessUnavailable (with the reason) when that path is not reachable."""
        registry = self._root(node) / REGISTRY.lstrip("/")
        try:
            registry.stat()
        except OSError as exc:
            raise NodeAccessUnavailable(
                f"kind node {node}'s plugin registry is not reachable as {registry}: {exc}"
            ) from exc
        return registration.plugins_in(registry)

    def _exec_host(self, *argv: str) -> str:
        """Run a host command (``docker ...``); its stdout. Raises NodeAccessUnavailable when it fails."""
        binary = shutil.which(argv[0])  # the nerdctl CLI comes as an absolute path
        if not binary:
            raise NodeAccessUnavailable(f"{argv[0]} is not installed")
        proc = subprocess.run([binary, *argv[1:]], capture_output=True, text=True, timeout=60, env=self.env)
        if proc.returncode != 0:
            raise NodeAccessUnavailable(f"{' '.join(argv)}: {proc.stderr.strip()}")
        return proc.stdout

    def pod_resources(self, node: str) -> PodResourcesClient:
        """The node kubelet's PodResources socket, dialled through the node container's root."""
        return PodResourcesClient(self._root(node) / PODRESOURCES.lstrip("/"))

    def dra_plugin(self, node: str, driver: str) -> draplugin.DraPluginClient:
        """A client of ``driver``'s DRAPlugin service on ``node``: the endpoint its registration GetInfo
        advertises (a path inside the node container), dialled through the node container's root. Raises
        DraPluginError when no plugin of that driver is registered on the node, NodeAccessUnavailable when the
        node's root is not reachable. A path too long for a unix socket address is dialled through a symlink."""
        socket, version = draplugin.endpoint_of(self.plugin_info(node), driver, node)
        path = str(self._root(node) / socket.lstrip("/"))
        if len(path.encode()) > UNIX_PATH_MAX:  # longer than a unix socket address: dial it through a short link
            path = _short_link(path)
        return draplugin.DraPluginClient(path, version, driver=driver, node=node)

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str:
        directory = crilog.log_dir(namespace, pod, uid, container)
        return crilog.output(self._exec(node, "sh", "-c", f"cat $(ls {directory}/*.log | tail -n 1)"))

    def restart_kubelet(self, node: str) -> None:
        self._exec(node, "systemctl", "restart", "kubelet")

    def can_restart_kubelet(self) -> tuple[bool, str]:
        return True, "systemctl restart kubelet inside the kind node"

    def device_numbers(self, node: str, paths: list[str]) -> dict[str, str]:
        """``{path: "c 1:3"}`` of the device nodes at ``paths`` inside the node container (``stat -L``; a path
        that does not exist is left out; StatsNodeDevices)."""
        return cdi_identity.parse_stat(self._exec(node, "sh", "-c", cdi_identity.stat_script(paths)))
