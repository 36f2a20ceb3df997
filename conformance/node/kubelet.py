"""What a kubelet says about DRA plugins, read from its metrics through the API server's node proxy
(``/api/v1/nodes/<node>/proxy/metrics``): which registration sockets its plugin manager accepted, and which
gRPC methods it called on a driver. Works on every cluster kind, without node access.

Sources: kubelet pluginmanager metric ``plugin_manager_total_plugins{socket_path, state}`` (pkg/kubelet/
pluginmanager/metrics; ``state="actual_state_of_world"`` holds a socket only after GetInfo answered and the
DRA handler's ValidatePlugin accepted its supported versions, operation_generator.go); kubelet DRA metric
``dra_grpc_operations_duration_seconds{driver_name, method_name, grpc_status_code}`` (client interceptor of
pkg/kubelet/cm/dra/plugin: ``method_name`` is the full gRPC method, so it names the service the kubelet
chose, ``/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/...`` for the GA API of KEP-4381 / 1.34).
"""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath

from conformance.k8s.client import K8s
from conformance.k8s.prometheus import samples

ACCEPTED = "actual_state_of_world"  # plugin_manager_total_plugins state of registered plugins
DRA_V1_SERVICE = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"  # gRPC service of the GA kubelet API
PREPARE_V1 = f"/{DRA_V1_SERVICE}/NodePrepareResources"


def metrics(k8s: K8s, node: str) -> str:
    """The kubelet's /metrics text through the node proxy. Raises ApiError (e.g. 403 without
    ``nodes/proxy``) or OSError when unreadable."""
    return k8s.get_raw(f"/api/v1/nodes/{node}/proxy/metrics")


def accepted_sockets(text: str) -> list[str]:
    """Socket paths the kubelet's plugin manager holds as registered (``actual_state_of_world``), sorted."""
    return sorted(
        labels.get("socket_path", "")
        for labels, value in samples(text, "plugin_manager_total_plugins")
        if labels.get("state") == ACCEPTED and value >= 1
    )


def accepts_socket(accepted: list[str], socket: str) -> bool:
    """Whether one of the ``accepted`` socket paths (:func:`accepted_sockets`) has the exact file name
    ``socket``."""
    return any(PurePosixPath(path).name == socket for path in accepted)


@dataclasses.dataclass(frozen=True)
class DraCalls:
    """Successful gRPC calls one kubelet made to one driver: ``{method name: count}`` (from the
    ``dra_grpc_operations_duration_seconds_count`` samples with ``grpc_status_code="OK"``)."""

    node: str
    driver: str
    counts: dict

    @classmethod
    def read(cls, k8s: K8s, node: str, driver: str) -> DraCalls:
        """The calls so far, read from ``node``'s kubelet metrics (errors: see :func:`metrics`)."""
        return cls.parse(metrics(k8s, node), node, driver)

    @classmethod
    def parse(cls, text: str, node: str, driver: str) -> DraCalls:
        """The calls to ``driver`` in kubelet metrics ``text``."""
        counts: dict[str, float] = {}
        for labels, value in samples(text, "dra_grpc_operations_duration_seconds_count"):
            if labels.get("driver_name") == driver and labels.get("grpc_status_code") == "OK":
                method = labels.get("method_name", "")
                counts[method] = counts.get(method, 0) + value
        return cls(node, driver, counts)

    def since(self, before: DraCalls) -> dict[str, float]:
        """``{method: calls}`` made after ``before`` (methods whose count grew)."""
        grown = {m: n - before.counts.get(m, 0) for m, n in self.counts.items()}
        return {m: n for m, n in sorted(grown.items()) if n > 0}
