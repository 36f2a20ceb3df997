"""NodeAccess for clusters the harness did not create: one privileged helper pod per node (explicit opt-in,
``--node-access privileged-pod``), with the host's root mounted at /host and the host PID namespace.

Reads CDI specs (/var/run/cdi, /etc/cdi), the kubelet plugin registry and container log files through
``exec``; restarts the kubelet with ``nsenter -t 1 ... systemctl restart kubelet``. PodResources needs a
gRPC client next to the socket, which a shell helper does not have: ``pod_resources`` raises
NodeAccessUnavailable. The helper namespace carries the run label, so the session sweep removes it.
"""

from __future__ import annotations

import shlex

from kubernetes import client as kclient
from kubernetes.stream import stream

from conformance.core import errors, names, timeouts
from conformance.k8s import waits
from conformance.k8s.client import K8s

from . import crilog
from .base import NodeAccessUnavailable
from .podresources import PodResourcesClient

KUBELET_ROOT = "/var/lib/kubelet"
CDI_DIRS = ("/var/run/cdi", "/etc/cdi")


def helper_pod(name: str, namespace: str, node: str, image: str, run_id: str) -> dict:
    """The privileged helper pod spec for ``node`` (hostPID, host / at /host, tolerates every taint)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": names.run_labels(run_id, "node-access")},
        "spec": {
            "nodeName": node,
            "hostPID": True,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "helper",
                    "image": image,
                    "command": ["sleep", "86400"],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }


class HelperPodNodeAccess:
    """Node access through privileged helper pods (created by :meth:`start`, removed by :meth:`stop`)."""

    mode = "privileged-pod"

    def __init__(self, k8s: K8s, node_names: list[str], run_id: str, image: str = "busybox:1.36") -> None:
        self.k8s, self.node_names, self.run_id, self.image = k8s, list(node_names), run_id, image
        self.namespace = names.dns_label(f"dra-node-access-{run_id}")
        self.pods: dict[str, str] = {}
        self._error = ""

    def start(self) -> None:
        """Create the namespace and one helper pod per node; wait until they run (bounded)."""
        try:
            self.k8s.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": self.namespace, "labels": names.run_labels(self.run_id, "node-access")},
                }
            )
            waits.default_service_account(self.k8s, self.namespace, timeout=timeouts.API_SHORT)
            for i, node in enumerate(self.node_names):
                pod = self.k8s.create(helper_pod(f"helper-{i}", self.namespace, node, self.image, self.run_id))
                waits.pod_running(self.k8s, pod, timeout=timeouts.POD_START)
                self.pods[node] = pod.name
        except errors.ConformanceError as exc:
            self._error = str(exc).splitlines()[0]

    def stop(self) -> None:
        """Delete the helper namespace (its pods go with it)."""
        try:
            self.k8s.delete("Namespace", self.namespace)
        except errors.NotFound:
            pass

    def _exec(self, node: str, script: str) -> str:
        if node not in self.pods:
            raise NodeAccessUnavailable(f"no helper pod on node {node}: {self._error or 'not started'}")
        api = kclient.CoreV1Api(self.k8s.api)
        return stream(
            api.connect_get_namespaced_pod_exec,
            self.pods[node],
            self.namespace,
            command=["sh", "-c", script],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )

    def probe(self) -> tuple[bool, str]:
        if len(self.pods) != len(self.node_names):
            return False, f"privileged helper pods not running: {self._error or 'not started'}"
        return True, f"privileged helper pods in namespace {self.namespace} on {sorted(self.pods)}"

    def cdi_specs(self, node: str) -> dict[str, str]:
        out = {}
        for directory in CDI_DIRS:
            listing = self._exec(node, f"ls /host{directory} 2>/dev/null || true").split()
            for name in listing:
                out[name] = self._exec(node, f"cat /host{directory}/{shlex.quote(name)}")
        return out

    def plugin_sockets(self, node: str) -> list[str]:
        return sorted(self._exec(node, f"ls /host{KUBELET_ROOT}/plugins_registry").split())

    def plugin_info(self, node: str) -> list[dict]:
        raise NodeAccessUnavailable(
            "the privileged helper pod has no gRPC client for the registration sockets "
            "(kubelet acceptance is still checked through its metrics, without node access)"
        )

    def pod_resources(self, node: str) -> PodResourcesClient:
        raise NodeAccessUnavailable("the privileged helper pod has no gRPC client for the PodResources socket")

    def dra_plugin(self, node: str, driver: str):
        raise NodeAccessUnavailable("the privileged helper pod has no gRPC client for the driver's DRA socket")

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str:
        directory = crilog.log_dir(namespace, pod, uid, container, root="/host" + crilog.POD_LOGS)
        return crilog.output(self._exec(node, f"cat $(ls {shlex.quote(directory)}/*.log | tail -n 1)"))

    def restart_kubelet(self, node: str) -> None:
        self._exec(node, "nsenter -t 1 -m -u -i -n -p -- systemctl restart kubelet")

    def can_restart_kubelet(self) -> tuple[bool, str]:
        ok, why = self.probe()
        return ok, (why + " (nsenter + systemctl)") if ok else why
