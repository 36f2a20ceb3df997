"""Helm deployer: ``helm upgrade --install`` of the profile's chart with its values, ``helm uninstall`` on
teardown. The helm binary comes from the toolchain cache (versions.toml ``go.helm``).

Profile keys (``deploy`` with ``mode: helm``, or ``deploy_alternatives.helm``): ``chart`` -- a chart directory
(relative paths resolve against the repository when they exist there), a packaged ``.tgz``, a repo reference
(``repo/name``, ``oci://HOST/PATH/CHART`` with ``version``; a loopback OCI registry is reached with helm's
``--plain-http``), a chart name in the classic chart repository ``repo: URL`` (its ``index.yaml``; helm's
``--repo``), or ``{go_module: TOOL, path: DIR}``: DIR inside the pinned Go tool's module in
the Go module cache (read in place); ``values_files`` (values files as vendors document them, relative to the
profile; helm ``--values`` each, before the harness's own values); ``release``, ``namespace`` (default: the
profile name), ``values``,
``set`` (``--set`` items), ``version``, ``timeout_s``; ``env_values`` (chart values from the environment,
:mod:`.chartvalues`); ``images``: names from ``dra-conformance images cache``
imported into every node before the install when the cluster takes archives (core.handles.LoadsImages);
``upgrade_from``: the driver's previous version for the upgrade lane (conformance.drivers.helm_upgrade).
The run's ``--values FILE`` is helm's last ``--values`` (it wins over the profile's values).

Ready means: ``helm --wait`` returned, every DaemonSet of the namespace runs its current generation Ready on
every node (helm's own wait lets ``maxUnavailable`` pods lag), every kubelet whose metrics are readable holds
the plugin registrations it held before again (or a first one), the profile's DeviceClasses exist and every
real node publishes a slice with a device (KEP-4381). Teardown leaves nothing: the release (DeviceClasses,
RBAC, DaemonSet), the namespace when this deployer created it, and the driver's slices.
A release that already exists (``helm list --all``) is refused before anything is installed (ConfigError):
tear-down uninstalls only a release this run created. helm reaches the cluster through the run's resolved
kubeconfig (conformance.k8s.kubeconfig: ``--kubeconfig``/``$KUBECONFIG``, ``--kube-context``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance import shipped, toolbox
from conformance.core import errors, timeouts
from conformance.core.handles import ClusterHandle
from conformance.core.profile import DriverProfile
from conformance.drivers import chartvalues, helm_upgrade, nodeimages, readiness
from conformance.drivers.base import DeployContext, DeployedDriver
from conformance.drivers.readiness import await_slices, check_device_classes, delete_slices, registered_sockets
from conformance.k8s import kubeconfig, waits
from conformance.k8s.client import K8s


def resolve_chart(chart: Any, source: str = "deploy.chart", profile_source: str | None = None) -> str:
    """What ``helm install`` takes for the profile's ``chart`` value (see module docstring). Raises
    ConfigError naming ``source`` for a mapping without ``go_module``/``path`` or a module not in the cache."""
    if isinstance(chart, Mapping):
        if not chart.get("go_module") or not chart.get("path"):
            raise errors.ConfigError(
                f"chart mapping {dict(chart)!r} needs go_module and path",
                field=source,
                fix="chart: {go_module: dra-example-driver, path: deployments/helm/dra-example-driver}",
            )
        try:
            return str(toolbox.go_module_dir(str(chart["go_module"]), str(chart["path"])))
        except (KeyError, toolbox.ToolMissing) as exc:
            raise errors.ConfigError(str(exc), field=source, fix="run `make setup` or fix go_module") from None
    text = str(chart)
    local = shipped.resolve_path(text, profile_source)
    return str(local) if local is not None and not text.startswith("oci://") else text


def chart_source_args(deploy: Mapping[str, Any], chart: str, profile_source: str | None = None) -> list[str]:
    """helm flags for where ``chart`` comes from and the vendor's values files: ``--repo URL`` (``deploy.repo``,
    a classic chart repository), ``--plain-http`` for an ``oci://`` chart on a loopback registry (127.0.0.0/8,
    localhost, [::1]: the lab's, served without TLS), ``--values FILE`` per ``deploy.values_files`` (resolved like
    every profile path: conformance.shipped.resolve_path). Raises ConfigError naming a values file that does not
    exist. Source: helm install ``--repo``, ``--plain-http``, ``--values``."""
    args = ["--repo", str(deploy["repo"])] if deploy.get("repo") else []
    host = chart[len("oci://") :].split("/", 1)[0] if chart.startswith("oci://") else ""
    if host.startswith(("127.", "localhost", "[::1]")):
        args.append("--plain-http")
    files = deploy.get("values_files") or []
    for i, name in enumerate(files if isinstance(files, list) else [files]):
        path = shipped.resolve_path(str(name), profile_source)
        if path is None:
            raise errors.ConfigError(
                f"values file {name!r} does not exist (beside the profile, in the current directory or the package)",
                field=f"deploy.values_files[{i}]",
                fix="give a path relative to the profile file or an absolute path",
            )
        args += ["--values", str(path)]
    return args


def cli_values_file(path: str) -> str:
    """The absolute path of ``--values FILE``; ConfigError naming it when it is not a readable file."""
    resolved = Path(path).expanduser().resolve()
    if not resolved.is_file():
        raise errors.ConfigError(f"values file {path!r} does not exist", source="--values", fix="give a YAML file")
    return str(resolved)


class HelmDeployer:
    """Installs a chart (``deploy.chart``, ``release``, ``namespace``, ``values``, ``version``, ``images``)."""

    def __init__(
        self,
        cluster: ClusterHandle,
        profile: DriverProfile,
        k8s: K8s,
        *,
        image_repo: str | None = None,
        ready_timeout: float = timeouts.SLICES_PUBLISHED * 5,
        kube: kubeconfig.Kubeconfig | None = None,
        values_file: str | None = None,
    ) -> None:
        self.cluster, self.profile, self.k8s = cluster, profile, k8s
        self._kube = kube
        self.values_file = cli_values_file(values_file) if values_file else None  # --values FILE: applied last
        self.image_repo, self.ready_timeout = image_repo, ready_timeout
        d = profile.deploy
        self.release = d.get("release") or profile.name
        self.namespace = d.get("namespace") or profile.name
        self.installed = False
        self.created_namespace = False

    @classmethod
    def from_context(cls, ctx: DeployContext) -> HelmDeployer:
        """The registry factory of ``helm``; ConfigError when the profile names no chart."""
        if ctx.profile.deploy_mode != "helm":
            raise errors.ConfigError(
                f"profile {ctx.profile.name} has no helm chart",
                source="--driver-deploy",
                fix="add deploy.chart (or deploy_alternatives.helm.chart) to the profile or use another mode",
            )
        return cls(ctx.cluster, ctx.profile, ctx.k8s, image_repo=ctx.image_repo, kube=ctx.kubeconfig,
                   values_file=ctx.values_file)  # fmt: skip

    @property
    def kube(self) -> kubeconfig.Kubeconfig:
        """What helm reaches the cluster with: the run's resolved kubeconfig and context, else the cluster
        handle's file (conformance.k8s.kubeconfig)."""
        return self._kube or kubeconfig.resolve(self.cluster.kubeconfig)

    def _helm(self, *args: str, timeout: float = 600) -> str:
        try:
            binary = toolbox.program("helm")
        except toolbox.ToolMissing as exc:
            raise errors.ConfigError(str(exc), source="--driver-deploy helm", fix="run `make setup`") from None
        cmd = [str(binary), *self.kube.cli_args("helm"), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.kube.env())
        if proc.returncode != 0:
            raise errors.DriverNotReady(
                self.profile.driver,
                f"helm {' '.join(args[:3])} to succeed",
                (proc.stderr or proc.stdout).strip()[-2000:],
            )
        return proc.stdout

    def load_images(self, spec: Mapping[str, Any] | None = None) -> list[str]:
        """Import the ``images`` of ``spec`` (default: the profile's deploy block) into every node when the
        cluster takes archives; returns the image references (none for a cluster with a registry of its own:
        the chart's pull policy applies)."""
        return nodeimages.load(self.cluster, (self.profile.deploy if spec is None else spec).get("images") or [])

    def deploy(self) -> DeployedDriver:
        """Load images, install the chart, then require the DeviceClasses and a slice on every node. Raises
        DriverNotReady (after removing what it installed) or ConfigError."""
        d = self.profile.deploy
        helm_upgrade.previous_spec(d)  # a bad upgrade_from is refused before anything is installed
        self.refuse_existing_release()  # before `installed`: a refusal uninstalls nothing
        try:
            self.created_namespace = not self.k8s.exists("Namespace", self.namespace)
            self.installed = True
            chart = self.install(d)
        except BaseException:
            self.teardown()
            raise
        return self.attach({"version": str(d.get("version") or self._chart_version(chart))})

    def refuse_existing_release(self) -> None:
        """Raise ConfigError (exit 4) naming the release, the namespace and the fix when ``helm list`` finds the
        release already there (any state): ``helm upgrade --install`` would take it over and tear-down would
        uninstall a release this run did not create (issue 22). Installs and removes nothing."""
        found = self._helm("list", "--all", "--namespace", self.namespace, "--filter", f"^{re.escape(self.release)}$",
                           "--output", "json", timeout=120)  # fmt: skip
        if any(r.get("name") == self.release for r in json.loads(found or "[]")):
            raise errors.ConfigError(
                f"helm release {self.release!r} already exists in namespace {self.namespace!r}: this run did not "
                "create it, so it neither upgrades nor uninstalls it",
                source="--driver-deploy helm",
                fix="drop --driver-deploy (and --allow-install) to qualify the installed driver (preinstalled), or "
                "give the profile another deploy.release or deploy.namespace",
            )

    def install(self, d: Mapping[str, Any]) -> str:
        """``helm upgrade --install`` of the deploy spec ``d`` (chart, values, set, version, images, timeout_s)
        over the release, then the DeviceClasses and a slice on every node; returns the chart helm took. Raises
        DriverNotReady or ConfigError (removes nothing: :meth:`deploy` and the upgrade lane decide)."""
        chart = str(d["chart"]) if d.get("repo") else resolve_chart(d["chart"], profile_source=self.profile.source)
        source = chart_source_args(d, chart, self.profile.source)  # before the temporary file: may raise
        nodes = [n.name for n in self.cluster.nodes]
        values = chartvalues.chart_values(d, os.environ, self.image_repo, nodes)  # values, env_values, --image-repo
        self.load_images(d)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
            yaml.safe_dump(values, fh)
            values_file = fh.name
        timeout_s = int(d.get("timeout_s", 300))
        args = ["upgrade", "--install", self.release, chart, "--namespace", self.namespace, "--create-namespace"]
        args += [*source, "--values", values_file] + (["--values", self.values_file] if self.values_file else [])
        args += ["--wait", "--timeout", f"{timeout_s}s"]
        if d.get("version"):
            args += ["--version", str(d["version"])]
        for item in d.get("set") or []:
            args += ["--set", str(item)]
        before = registered_sockets(self.k8s, nodes)
        try:
            self._helm(*args, timeout=timeout_s + 60)
            helm_upgrade.await_rollout(self.k8s, self.profile.driver, self.namespace, before, timeout_s, self.pod_logs)
            check_device_classes(self.k8s, self.profile)
            await_slices(self.k8s, self.profile, nodes, timeout=self.ready_timeout, logs=self.pod_logs)
        finally:
            Path(values_file).unlink(missing_ok=True)
        return chart

    @staticmethod
    def _chart_version(chart: str) -> str:
        try:
            meta = yaml.safe_load((Path(chart) / "Chart.yaml").read_text())
            return f"{meta['name']} chart {meta['version']} (app {meta.get('appVersion', '?')})"
        except (OSError, yaml.YAMLError, KeyError, TypeError):
            return ""

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle (also in xdist workers): logs come from the release's pods; it upgrades the release from
        the profile's ``upgrade_from`` (conformance.drivers.helm_upgrade)."""
        d, version = self.profile.deploy, str(state.get("version", ""))
        previous = helm_upgrade.previous_spec(d)
        return helm_upgrade.HelmDriver.of(
            self.profile,
            "helm",
            version=version,
            log_source=self.pod_logs,
            daemonset_namespaces=(self.namespace,),
            k8s=self.k8s,
            install=self.install,
            current=d,
            previous=previous,
            previous_name=str((d.get("upgrade_from") or {}).get("name", "")),
            downgrade=bool((d.get("upgrade_from") or {}).get("downgrade", True)),
        )

    def pod_logs(self) -> dict[str, str]:
        """Logs of every container of the release's namespace (best effort)."""
        return readiness.pod_logs(self.k8s, [self.namespace])

    def teardown(self) -> None:
        """``helm uninstall --wait`` (when installed), the namespace when we created it (waited for), then
        the driver's leftover slices. Idempotent; errors are swallowed (tear-down continues)."""
        if self.installed:
            self.installed = False
            try:
                self._helm("uninstall", self.release, "--namespace", self.namespace, "--wait", timeout=300)
            except errors.ConformanceError:
                pass
            if self.created_namespace:
                self.created_namespace = False
                try:
                    ns = self.k8s.get("Namespace", self.namespace)
                    self.k8s.unguarded().delete("Namespace", self.namespace)
                    waits.object_gone(self.k8s, ns, timeout=120)
                except errors.ConformanceError:
                    pass
            delete_slices(self.k8s, self.profile.driver)
