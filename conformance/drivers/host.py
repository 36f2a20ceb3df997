"""Host-mode deployers: one kubelet-plugin process per node, started through the local cluster handle.

* ``bundled``: our reference driver (``python -m reference_driver``), DeviceClass from reference_driver/deploy/
  when a ``deviceclass*.yaml`` is there, otherwise generated from the profile; the run's
  ``DRA_REFERENCE_FAULTS`` reach the plugins (inherited) and the class (:data:`CLASS_FAULTS`), as the chart's
  ``faults`` value does in reference_driver/deploy/chart.
* ``host``: a third-party binary from the toolchain cache (dra-example-driver, the upstream dra-test-driver)
  with the profile's ``deploy.args`` templated by node paths (``{node_name}``, ``{kubeconfig}``,
  ``{cdi_dir}``, ``{plugin_registry_dir}``, ``{plugins_dir}``, ``{kubelet_root_dir}``, ``{state_dir}``,
  ``{driver}``, ``{netdevs_cel}``). ``deploy.netdevs: {kind, count}`` first gives every node test network
  interfaces (the cluster's MakesTestNetdevs; ``{netdevs_cel}`` is the CEL list literal of that node's names,
  for a driver's interface filter) and removes them at tear-down; ``deploy.nri: true`` starts the plugin
  through the cluster's RunsNriPlugins, where the default NRI socket is the node's.
Flags: reference_driver/config.py; dra-example-driver cmd/dra-example-kubeletplugin; k8s
test/e2e/dra/test-driver/app/server.go (``kubelet-plugin`` subcommand).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance import images, shipped, toolbox
from conformance.core import errors, timeouts
from conformance.core.handles import ClusterHandle, MakesTestNetdevs, RunsHostProcesses, RunsNriPlugins
from conformance.core.profile import DriverProfile
from conformance.drivers.base import DeployContext, HostProcessDriver
from conformance.drivers.readiness import (
    await_slices,
    check_device_classes,
    delete_device_classes,
    delete_slices,
    ensure_device_classes,
)
from conformance.k8s.client import K8s


def _require_host_processes(cluster: ClusterHandle, profile: DriverProfile) -> RunsHostProcesses:
    if not isinstance(cluster, RunsHostProcesses):
        raise errors.ConfigError(
            f"deploy mode {profile.deploy_mode} runs the kubelet plugin as a host process, "
            "which only the local cluster supports",
            source="--driver-deploy",
            fix="use --cluster local, or --driver-deploy helm|manifests|preinstalled",
        )
    return cluster


def cel_string_list(values: list[str]) -> str:
    """A CEL list literal of string ``values`` (``["a", "b"]``), each quoted and escaped (CEL string
    literals take JSON's escapes for ``"`` and ``\\``; cel-spec langdef.md "String and Bytes Values")."""
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _ability(cluster: ClusterHandle, ability: type, field: str, profile: DriverProfile):
    if not isinstance(cluster, ability):
        raise errors.ConfigError(
            f"this cluster provider cannot honour {field} ({ability.__name__})",
            source=profile.source,
            field=field,
            fix="use --cluster local, or deploy the driver yourself and use --driver-deploy preinstalled",
        )
    return cluster


# reference-driver faults of its deploy, not of its plugin: fault -> DeviceClass spec field the bundled deploy
# then leaves out (reference_driver/faults.py; the chart's templates/deviceclass.yaml does the same)
CLASS_FAULTS = {"class-without-extended-resource": "extendedResourceName"}


def bundled_class(doc: dict, faults: str | None = None) -> dict:
    """The reference driver's DeviceClass ``doc`` as the bundled deploy creates it: without the spec fields of
    the :data:`CLASS_FAULTS` listed in ``faults`` (comma-separated; default the run's ``DRA_REFERENCE_FAULTS``)."""
    raw = os.environ.get("DRA_REFERENCE_FAULTS", "") if faults is None else faults
    for fault in {f.strip() for f in raw.split(",")} & CLASS_FAULTS.keys():
        doc.get("spec", {}).pop(CLASS_FAULTS[fault], None)
    return doc


class HostDeployer:
    """Starts the plugin on every node of a local cluster and waits for its slices."""

    def __init__(
        self,
        cluster: ClusterHandle,
        profile: DriverProfile,
        k8s: K8s,
        run_id: str,
        *,
        state_root: Path,
        ready_timeout: float = timeouts.SLICES_PUBLISHED,
    ) -> None:
        self.cluster, self.profile, self.k8s, self.run_id = cluster, profile, k8s, run_id
        self.state_root, self.ready_timeout = Path(state_root), ready_timeout
        self.processes: dict = {}
        self.created_classes: list[str] = []
        self.netdevs: dict[str, list[str]] = {}  # node -> test interfaces created for it

    @classmethod
    def from_context(cls, ctx: DeployContext) -> HostDeployer:
        """The registry factory of ``bundled`` and ``host``: the mode must be the profile's own (its
        ``deploy`` keys say how to start the plugin). Raises ConfigError otherwise."""
        if ctx.mode != ctx.profile.deploy_mode:
            raise errors.ConfigError(
                f"profile {ctx.profile.name} has no {ctx.mode} deploy settings",
                source="--driver-deploy",
                fix=f"use --driver-deploy {ctx.profile.deploy_mode} or preinstalled",
            )
        return cls(ctx.cluster, ctx.profile, ctx.k8s, ctx.run_id, state_root=ctx.state_root)

    def _values(self, node) -> dict[str, str]:
        """The placeholders of ``deploy.args``/``deploy.env`` for ``node`` (module docstring)."""
        return {
            "node_name": node.name,
            "kubeconfig": str(self.cluster.kubeconfig),
            "cdi_dir": str(node.cdi_dir),
            "plugin_registry_dir": str(node.plugin_registry_dir),
            "plugins_dir": str(node.plugins_dir),
            "kubelet_root_dir": str(node.kubelet_root_dir),
            "state_dir": str(self.state_root / node.name),
            "driver": self.profile.driver,
            "netdevs_cel": cel_string_list(self.netdevs.get(node.name, [])),
        }

    def _argv(self, node) -> tuple[list[str], dict[str, str]]:
        values = self._values(node)
        return self._bundled_argv(values) if self.profile.deploy_mode == "bundled" else self._binary_argv(values)

    def _bundled_argv(self, values: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """``python -m reference_driver`` with the node's paths (flags: reference_driver/config.py)."""
        deploy = self.profile.deploy
        flags = ("node_name", "kubeconfig", "plugin_registry_dir", "plugins_dir", "cdi_dir", "state_dir")
        argv = [sys.executable, "-m", "reference_driver"]
        for key in flags:
            argv += ["--" + key.replace("_", "-"), values[key]]
        argv += ["--driver-name", self.profile.driver]
        if deploy.get("devices"):
            devices = shipped.resolve_path(deploy["devices"], self.profile.source) or deploy["devices"]
            argv += ["--config", str(devices)]
        argv += [str(a) for a in deploy.get("args") or []]  # e.g. --device-status, --binding-conditions
        return argv, {"PYTHONPATH": str(shipped.SOURCE_ROOT)}

    def _binary_argv(self, values: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The profile's ``deploy.binary`` (a pinned Go tool's or a Kubernetes binary) with ``deploy.args`` and
        ``deploy.env`` templated by ``values``. Raises ConfigError for a missing binary or an unknown
        placeholder."""
        deploy = self.profile.deploy
        binary = deploy["binary"]
        try:
            path = (
                toolbox.program(binary.get("name") or binary["tool"], tool=binary["tool"])
                if "tool" in binary
                else toolbox.program(binary["k8s"], k8s_version=self.cluster.k8s_version)
            )
        except toolbox.ToolMissing as exc:
            raise errors.ConfigError(
                str(exc), source=self.profile.source, field="deploy.binary", fix="run `make setup`"
            ) from None
        try:
            args = [str(a).format(**values) for a in deploy.get("args") or []]
            env = {k: str(v).format(**values) for k, v in (deploy.get("env") or {}).items()}
        except KeyError as exc:
            raise errors.ConfigError(
                f"unknown placeholder {exc}",
                source=self.profile.source,
                field="deploy.args",
                fix="use " + ", ".join(f"{{{k}}}" for k in values),
            ) from None
        return [str(path)] + args, env

    def deploy(self) -> HostProcessDriver:
        """Start one plugin per node, create missing DeviceClasses, wait for slices on every node.

        Raises ConfigError (not a local cluster, binary missing), DriverNotReady (no slices, no class).
        On failure everything started is stopped again.
        """
        cluster = _require_host_processes(self.cluster, self.profile)
        net, nri = self.profile.deploy.get("netdevs"), bool(self.profile.deploy.get("nri"))
        start = cluster.start_host_process
        if nri:
            start = _ability(self.cluster, RunsNriPlugins, "deploy.nri", self.profile).start_nri_plugin
        try:
            for node in self.cluster.nodes:
                if net:
                    made = _ability(self.cluster, MakesTestNetdevs, "deploy.netdevs", self.profile)
                    self.netdevs[node.name] = made.add_test_netdevs(node.name, net.get("kind", "ifb"), net["count"])
                argv, env = self._argv(node)
                (self.state_root / node.name).mkdir(parents=True, exist_ok=True)
                # the per-driver socket dir: some plugins (upstream dra-test-driver) only create its parent
                (Path(node.plugins_dir) / self.profile.driver).mkdir(parents=True, exist_ok=True)
                self.processes[node.name] = start(node.name, f"driver-{self.profile.name}", argv, env=env)
            self.created_classes = self._device_classes()
            check_device_classes(self.k8s, self.profile)
            handle = self._handle()
            await_slices(
                self.k8s,
                self.profile,
                [n.name for n in self.cluster.nodes],
                timeout=self.ready_timeout,
                logs=handle.logs,
                failed=self._exited,
            )
            return handle
        except BaseException:
            self.teardown()
            raise

    def _exited(self) -> str | None:
        gone = [f"{node} (log {p.log_path})" for node, p in self.processes.items() if not p.is_running()]
        return f"the kubelet plugin exited on {', '.join(gone)}" if gone else None

    def _device_classes(self) -> list[str]:
        deploy_dir = images.reference_driver_chart().parent
        files = sorted(deploy_dir.glob("deviceclass*.yaml")) if self.profile.deploy_mode == "bundled" else []
        created = []
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if (
                    doc
                    and doc.get("kind") == "DeviceClass"
                    and not self.k8s.exists("DeviceClass", doc["metadata"]["name"])
                ):
                    doc.setdefault("metadata", {}).setdefault("labels", {}).update(
                        {"dra-conformance.test/owner": "driver"}
                    )
                    self.k8s.create(bundled_class(doc))
                    created.append(doc["metadata"]["name"])
        return created + ensure_device_classes(self.k8s, self.profile, self.run_id)

    def _version(self) -> str:
        """Best known driver version: the profile's, else what we run (the dra-conformance distribution for
        the bundled driver, the pinned Go module version of a cached tool, the cluster's tag for k8s binaries)."""
        if self.profile.version:
            return self.profile.version
        if self.profile.deploy_mode == "bundled":
            import importlib.metadata  # noqa: PLC0415

            try:
                return f"reference_driver {importlib.metadata.version('dra-conformance')}"
            except importlib.metadata.PackageNotFoundError:
                return ""
        binary = self.profile.deploy.get("binary") or {}
        if binary.get("tool"):
            return toolbox.version_of(binary["tool"])
        return f"k8s.io/kubernetes@{self.cluster.k8s_version}" if binary.get("k8s") else ""

    def _handle(self, version: str | None = None) -> HostProcessDriver:
        return HostProcessDriver.of(
            self.profile,
            self.profile.deploy_mode,
            processes=dict(self.processes),
            version=self._version() if version is None else version,
        )

    def attach(self, state: Mapping[str, Any]) -> HostProcessDriver:
        """The handle in an xdist worker: the plugin processes recorded by the cluster (named
        ``driver-<profile>``); this deployer does not own them (its teardown stops nothing)."""
        cluster = _require_host_processes(self.cluster, self.profile)
        procs = {p.node: p for p in cluster.host_processes() if p.name == f"driver-{self.profile.name}"}
        return HostProcessDriver.of(
            self.profile, self.profile.deploy_mode, processes=procs, version=str(state.get("version", ""))
        )

    def teardown(self) -> None:
        """Stop every plugin process and delete the DeviceClasses we created; then the driver's slices are
        removed by the API server's node ownership or by us (slices of this driver on our nodes)."""
        for proc in list(self.processes.values()):
            try:
                proc.stop(timeout=10.0)
            except Exception:  # noqa: BLE001 - keep stopping the others
                pass
        self.processes.clear()
        for node in list(self.netdevs):
            if isinstance(self.cluster, MakesTestNetdevs):
                self.cluster.remove_test_netdevs(node)  # those inside a pod's netns go with it; the cluster's
            self.netdevs.pop(node)  # tear-down deletes whatever is left
        delete_device_classes(self.k8s, self.created_classes)
        self.created_classes = []
        delete_slices(self.k8s, self.profile.driver)
