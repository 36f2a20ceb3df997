"""The driver-deployer contract (design.md §1): ``deploy(cluster, profile) -> DriverHandle``, ``teardown()``.

Deployers receive the cluster as the structural :class:`ClusterLike` Protocol (drivers never import
conformance.clusters). Pattern: kubernetes-sigs/e2e-framework ``env.Setup`` steps; csi-sanity driver config.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from conformance.core.profile import DriverProfile


@runtime_checkable
class NodeLike(Protocol):
    """A kubelet node seen from the host: name and the kubelet/CDI host paths."""

    name: str
    plugin_registry_dir: Path
    plugins_dir: Path
    cdi_dir: Path


@runtime_checkable
class ClusterLike(Protocol):
    """What a deployer needs from a cluster handle: admin kubeconfig, version, nodes. Local clusters also
    offer ``start_host_process(node, name, argv, env=None)`` for host-mode plugins."""

    kubeconfig: Path
    k8s_version: str
    nodes: list


@runtime_checkable
class ProcessLike(Protocol):
    """A host process (local cluster ``HostProcess``)."""

    pid: int
    log_path: Path

    def is_running(self) -> bool: ...

    def stop(self, timeout: float = 10.0) -> None: ...

    def restart(self) -> Any: ...


@dataclasses.dataclass
class DriverHandle:
    """A deployed driver: ``name`` (spec.driver), ``device_classes``, ``profile``, ``deploy_mode``,
    ``version`` (best known), ``processes`` (node -> host process, host/bundled modes), ``log_source``
    (callable returning {source: text}), ``restart`` (node name -> None, when the deployer can restart it)."""

    name: str
    device_classes: tuple[str, ...]
    profile: DriverProfile
    deploy_mode: str
    version: str = ""
    processes: dict[str, ProcessLike] = dataclasses.field(default_factory=dict)
    log_source: Callable[[], dict[str, str]] | None = None
    restart: Callable[[str], None] | None = None

    @property
    def device_class(self) -> str:
        """The DeviceClass tests use by default."""
        return self.device_classes[0]

    def logs(self, tail_bytes: int = 20000) -> dict[str, str]:
        """``{source: last tail_bytes of log text}`` of the driver's plugin processes or pods."""
        out: dict[str, str] = {}
        for node, proc in self.processes.items():
            try:
                data = Path(proc.log_path).read_bytes()[-tail_bytes:]
                out[f"{self.name}@{node}"] = data.decode(errors="replace")
            except OSError as exc:
                out[f"{self.name}@{node}"] = f"(log unreadable: {exc})"
        if self.log_source:
            out.update({k: v[-tail_bytes:] for k, v in self.log_source().items()})
        return out


class DriverDeployer(Protocol):
    """Deploys one driver; ``teardown()`` is idempotent and removes everything ``deploy`` created."""

    def deploy(self) -> DriverHandle: ...

    def teardown(self) -> None: ...
