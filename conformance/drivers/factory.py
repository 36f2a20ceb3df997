"""Choose the deployer for a profile's deploy mode (or the ``--driver-deploy`` override)."""
from __future__ import annotations

from pathlib import Path

from conformance.core.errors import ConfigError
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s

from .base import ClusterLike, DriverDeployer


def make_deployer(mode: str | None, cluster: ClusterLike, profile: DriverProfile, k8s: K8s, *, run_id: str,
                  state_root: Path, image_repo: str | None = None) -> DriverDeployer:
    """A deployer for ``mode`` (None = the profile's ``deploy.mode``). Raises ConfigError for a mode the
    profile has no settings for."""
    mode = mode or profile.deploy_mode
    if mode in ("bundled", "host"):
        if mode != profile.deploy_mode:
            raise ConfigError(f"profile {profile.name} has no {mode} deploy settings", source="--driver-deploy",
                              fix=f"use --driver-deploy {profile.deploy_mode} or preinstalled")
        from .host import HostDeployer  # noqa: PLC0415
        return HostDeployer(cluster, profile, k8s, run_id, state_root=state_root)
    if mode == "helm":
        if profile.deploy_mode != "helm":
            raise ConfigError(f"profile {profile.name} has no helm chart", source="--driver-deploy",
                              fix="add deploy.chart to the profile or use another mode")
        from .helm import HelmDeployer  # noqa: PLC0415
        return HelmDeployer(cluster, profile, k8s, image_repo=image_repo)
    if mode == "manifests":
        from .manifests import ManifestsDeployer  # noqa: PLC0415
        return ManifestsDeployer(cluster, profile, k8s)
    from .preinstalled import PreinstalledDeployer  # noqa: PLC0415
    return PreinstalledDeployer(profile, k8s)
