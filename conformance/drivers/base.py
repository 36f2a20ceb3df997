"""The driver-deployer contract (design.md §1): a registered factory ``(DeployContext) -> DriverDeployer``;
``deploy() -> DriverHandle``, ``attach(state) -> DriverHandle`` (xdist workers), idempotent ``teardown()``.

Deployers receive the cluster as the :class:`~conformance.core.handles.ClusterHandle` Protocol (drivers never
import conformance.clusters). Third parties register their own deployers (``conformance.runner.registry``).
Pattern: kubernetes-sigs/e2e-framework ``env.Setup`` steps; csi-sanity driver config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from conformance.core.handles import ClusterHandle, HostProcess
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s
from conformance.k8s.kubeconfig import Kubeconfig


@dataclasses.dataclass(frozen=True)
class DeployContext:
    """What a deployer factory receives.

    mode: the registry name it was chosen by (``--driver-deploy`` or the profile's ``deploy.mode``);
    cluster: the cluster handle; profile: the validated driver profile; k8s: a client without the write guard
    (drivers create cluster-scoped objects the run does not label); run_id; state_root: a directory of its own
    under the report dir; image_repo: ``--image-repo`` or None; kubeconfig: the run's resolved kubeconfig and
    context (conformance.k8s.kubeconfig) for helm/kubectl (None: the cluster handle's file, current context);
    values_file: ``--values FILE`` or None (helm deployers apply it last).
    """

    mode: str
    cluster: ClusterHandle
    profile: DriverProfile
    k8s: K8s
    run_id: str
    state_root: Path
    image_repo: str | None = None
    kubeconfig: Kubeconfig | None = None
    values_file: str | None = None


@runtime_checkable
class DriverDeployer(Protocol):
    """Deploys one driver. ``deploy()`` raises ConfigError/DriverNotReady after removing what it started;
    ``attach(state)`` -> the handle in another process of the same run (state: ``{"version": ...}`` as
    written by the session); ``teardown()`` is idempotent and removes everything ``deploy`` created."""

    def deploy(self) -> DeployedDriver: ...

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver: ...

    def teardown(self) -> None: ...


DriverDeployerFactory = Callable[[DeployContext], DriverDeployer]


@runtime_checkable
class DeclaresProfileKeys(Protocol):
    """A third-party deployer factory (usually the class) that names the ``deploy`` keys a profile may give
    for its mode (``profile_keys = frozenset({"operator_namespace"})``); a profile with ``deploy.mode`` set to
    that deployer's name is then accepted. Without it, such a profile may give no key besides ``mode``."""

    profile_keys: frozenset[str]


@dataclasses.dataclass
class DeployedDriver:
    """A deployed driver (implements :class:`conformance.core.handles.DriverHandle`): ``name``
    (spec.driver), ``device_classes``, ``profile``, ``deploy_mode``, ``version`` (best known), ``processes``
    (node -> host process, host modes), ``log_source`` (callable returning {source: text}),
    ``daemonset_namespaces`` (where the deployer put the driver's DaemonSets: the expected driver nodes,
    conformance.drivers.driver_nodes)."""

    name: str
    device_classes: tuple[str, ...]
    profile: DriverProfile
    deploy_mode: str
    version: str = ""
    processes: dict[str, HostProcess] = dataclasses.field(default_factory=dict)
    log_source: Callable[[], dict[str, str]] | None = None
    daemonset_namespaces: tuple[str, ...] = ()

    @classmethod
    def of(cls, profile: DriverProfile, mode: str, **fields: Any) -> DeployedDriver:
        """The handle of ``profile``'s driver deployed by ``mode``."""
        return cls(
            name=profile.driver, device_classes=profile.device_classes, profile=profile, deploy_mode=mode, **fields
        )

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


@dataclasses.dataclass
class HostProcessDriver(DeployedDriver):
    """A driver whose kubelet plugins are host processes the harness controls: it can restart them
    (:class:`conformance.core.handles.RestartsPlugin`) and remove and reinstall them
    (:class:`conformance.core.handles.RemovesDriver`)."""

    def restart_plugin(self, node: str) -> None:
        """Restart the plugin process on ``node``; KeyError naming the nodes when it runs none there."""
        if node not in self.processes:
            raise KeyError(f"driver {self.name} runs no host process on node {node!r} ({sorted(self.processes)})")
        self.processes[node].restart()

    def remove_driver(self) -> None:
        """Stop the plugin on every node (RemovesDriver): DeviceClasses, slices and the plugins' state
        directories stay, as after an uninstall of the plugin DaemonSet. Idempotent."""
        for proc in self.processes.values():
            proc.stop(timeout=10.0)

    def reinstall_driver(self) -> None:
        """Start the plugin again on every node where it does not run (same command, same state directory).
        Raises RuntimeError naming the node and the plugin's log when a plugin exits at once."""
        for proc in self.processes.values():
            if not proc.is_running():
                proc.restart()
        dead = [f"{node} (log {p.log_path})" for node, p in self.processes.items() if not p.is_running()]
        if dead:
            raise RuntimeError(f"driver {self.name}: the reinstalled kubelet plugin exited on {', '.join(dead)}")
