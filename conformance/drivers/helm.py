"""Helm deployer: ``helm upgrade --install`` of the profile's chart with its values, ``helm uninstall`` on
teardown. The helm binary comes from the toolchain cache (versions.toml ``go.helm``)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance.core import errors, timeouts
from conformance.core.handles import ClusterHandle
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s
from conformance.toolchain import cache

from .base import DeployContext, DeployedDriver
from .readiness import await_slices, check_device_classes


class HelmDeployer:
    """Installs a chart (``deploy.chart``, ``release``, ``namespace``, ``values``, ``version``)."""

    def __init__(
        self,
        cluster: ClusterHandle,
        profile: DriverProfile,
        k8s: K8s,
        *,
        image_repo: str | None = None,
        ready_timeout: float = timeouts.SLICES_PUBLISHED * 5,
    ) -> None:
        self.cluster, self.profile, self.k8s = cluster, profile, k8s
        self.image_repo, self.ready_timeout = image_repo, ready_timeout
        d = profile.deploy
        self.release = d.get("release") or profile.name
        self.namespace = d.get("namespace") or profile.name
        self.installed = False

    @classmethod
    def from_context(cls, ctx: DeployContext) -> HelmDeployer:
        """The registry factory of ``helm``; ConfigError when the profile names no chart."""
        if ctx.profile.deploy_mode != "helm":
            raise errors.ConfigError(
                f"profile {ctx.profile.name} has no helm chart",
                source="--driver-deploy",
                fix="add deploy.chart to the profile or use another mode",
            )
        return cls(ctx.cluster, ctx.profile, ctx.k8s, image_repo=ctx.image_repo)

    def _helm(self, *args: str, timeout: float = 600) -> str:
        try:
            binary = cache.tool_binary("helm")
        except cache.CacheMiss as exc:
            raise errors.ConfigError(str(exc), source="--driver-deploy helm", fix="run `make setup`") from None
        cmd = [str(binary), "--kubeconfig", str(self.cluster.kubeconfig), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise errors.DriverNotReady(
                self.profile.driver,
                f"helm {' '.join(args[:3])} to succeed",
                (proc.stderr or proc.stdout).strip()[-2000:],
            )
        return proc.stdout

    def deploy(self) -> DeployedDriver:
        """Install the chart, then require the DeviceClasses and slices. Raises DriverNotReady."""
        d = self.profile.deploy
        values = dict(d.get("values") or {})
        if self.image_repo:
            values.setdefault("image", {})["repository"] = self.image_repo
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
            yaml.safe_dump(values, fh)
            values_file = fh.name
        args = [
            "upgrade",
            "--install",
            self.release,
            str(d["chart"]),
            "--namespace",
            self.namespace,
            "--create-namespace",
            "--values",
            values_file,
            "--wait",
            "--timeout",
            f"{int(d.get('timeout_s', 300))}s",
        ]
        if d.get("version"):
            args += ["--version", str(d["version"])]
        for item in d.get("set") or []:
            args += ["--set", str(item)]
        try:
            self.installed = True
            self._helm(*args, timeout=int(d.get("timeout_s", 300)) + 60)
            check_device_classes(self.k8s, self.profile)
            await_slices(self.k8s, self.profile, timeout=self.ready_timeout, logs=self.pod_logs)
        except BaseException:
            self.teardown()
            raise
        finally:
            Path(values_file).unlink(missing_ok=True)
        return self.attach({"version": str(d.get("version") or "")})

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle (also in xdist workers): logs come from the release's pods."""
        return DeployedDriver.of(self.profile, "helm", version=str(state.get("version", "")), log_source=self.pod_logs)

    def pod_logs(self) -> dict[str, str]:
        """Logs of every container of the release's namespace (best effort)."""
        out = {}
        try:
            for pod in self.k8s.list("Pod", self.namespace):
                for c in pod.get("spec.containers") or []:
                    try:
                        out[f"{pod.name}/{c['name']}"] = self.k8s.logs(pod, container=c["name"], tail_lines=300)
                    except errors.ApiError as exc:
                        out[f"{pod.name}/{c['name']}"] = f"(logs unavailable: {exc})"
        except errors.ApiError:
            pass
        return out

    def teardown(self) -> None:
        """``helm uninstall`` (ignored when nothing was installed)."""
        if self.installed:
            self.installed = False
            try:
                self._helm("uninstall", self.release, "--namespace", self.namespace, "--wait", timeout=300)
            except errors.ConformanceError:
                pass
