"""Manifests deployer: ``kubectl apply -f <dir>`` (the cluster version's kubectl from the toolchain cache),
``kubectl delete -f <dir>`` on teardown."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.core import errors, timeouts
from conformance.core.handles import ClusterHandle
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s
from conformance.toolchain import cache

from .base import DeployContext, DeployedDriver
from .readiness import await_slices, check_device_classes


class ManifestsDeployer:
    """Applies every manifest in ``deploy.dir`` (relative to the profile file)."""

    def __init__(
        self,
        cluster: ClusterHandle,
        profile: DriverProfile,
        k8s: K8s,
        ready_timeout: float = timeouts.SLICES_PUBLISHED * 5,
    ) -> None:
        self.cluster, self.profile, self.k8s, self.ready_timeout = cluster, profile, k8s, ready_timeout
        base = Path(profile.source).parent if profile.source else Path.cwd()
        self.directory = (base / profile.deploy["dir"]).resolve()
        self.applied = False

    @classmethod
    def from_context(cls, ctx: DeployContext) -> ManifestsDeployer:
        """The registry factory of ``manifests``; ConfigError when the profile names no manifest directory."""
        if "dir" not in ctx.profile.deploy:
            raise errors.ConfigError(
                f"profile {ctx.profile.name} has no manifest directory",
                source="--driver-deploy",
                fix="add deploy.dir to the profile or use another mode",
            )
        return cls(ctx.cluster, ctx.profile, ctx.k8s)

    def _kubectl(self, *args: str) -> None:
        try:
            binary = cache.k8s_binary("kubectl", self.cluster.k8s_version)
        except cache.CacheMiss as exc:
            raise errors.ConfigError(str(exc), source="--driver-deploy manifests", fix="run `make setup`") from None
        proc = subprocess.run(
            [str(binary), "--kubeconfig", str(self.cluster.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise errors.DriverNotReady(
                self.profile.driver, f"kubectl {args[0]} -f {self.directory}", proc.stderr.strip()[-2000:]
            )

    def deploy(self) -> DeployedDriver:
        """Apply the manifests and require DeviceClasses and slices. Raises ConfigError, DriverNotReady."""
        if not self.directory.is_dir():
            raise errors.ConfigError(
                f"manifest directory {self.directory} does not exist",
                source=self.profile.source,
                field="deploy.dir",
                fix="point dir at the manifests",
            )
        try:
            self.applied = True
            self._kubectl("apply", "-f", str(self.directory))
            check_device_classes(self.k8s, self.profile)
            await_slices(self.k8s, self.profile, timeout=self.ready_timeout)
        except BaseException:
            self.teardown()
            raise
        return self.attach({})

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle (also in xdist workers)."""
        return DeployedDriver.of(self.profile, "manifests", version=str(state.get("version", "")))

    def teardown(self) -> None:
        """``kubectl delete -f`` what was applied."""
        if self.applied:
            self.applied = False
            try:
                self._kubectl("delete", "--ignore-not-found", "--wait=true", "-f", str(self.directory))
            except errors.ConformanceError:
                pass
