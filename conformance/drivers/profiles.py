"""Finding and loading driver profiles: ``--driver NAME`` (fixtures/drivers/NAME.yaml) or ``--driver PATH``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from conformance import shipped
from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.drivers import helm_upgrade

PROFILE_DIR = shipped.profiles_dir()


def available() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def resolve(driver: str) -> Path:
    """The profile file for ``driver`` (a shipped name or a path). Raises ConfigError listing the names."""
    looks_like_path = "/" in driver or driver.endswith((".yaml", ".yml"))
    path = Path(driver) if looks_like_path else PROFILE_DIR / f"{driver}.yaml"
    if not path.is_file():
        if looks_like_path:
            raise ConfigError(
                f"no such driver profile file {driver!r}",
                source="--driver",
                fix="give an existing YAML file or one of: " + ", ".join(available()),
            )
        raise ConfigError(
            f"unknown driver profile {driver!r}",
            source="--driver",
            fix="use one of: " + ", ".join(available()) + ", or a path to a profile YAML",
        )
    return path


def load(driver: str, extra_modes: Mapping[str, frozenset[str]] | None = None) -> schema.DriverProfile:
    """Load and validate the profile for ``driver``; ``extra_modes``: registered third-party deploy modes and
    their ``deploy`` keys (see :func:`conformance.core.profile.parse`). Raises ConfigError (file, field, fix)."""
    path = resolve(driver)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"is not valid YAML: {exc}", source=str(path), fix="fix the YAML syntax") from None
    profile = schema.parse(raw, source=str(path), extra_modes=extra_modes)
    check_upgrade_from(profile)
    return profile


def check_upgrade_from(profile: schema.DriverProfile) -> None:
    """Refuse a bad ``upgrade_from`` (the upgrade lane's previous version) of the profile's helm deploy block or
    its ``deploy_alternatives.helm`` now, before any cluster starts, with the check the upgrade lane itself
    applies (:func:`conformance.drivers.helm_upgrade.previous_spec`). Raises ConfigError naming the profile
    file, the field and the fix."""
    blocks = {"deploy": profile.deploy} if profile.deploy_mode == "helm" else {}
    blocks.update({f"deploy_alternatives.{m}": d for m, d in profile.deploy_alternatives.items() if m == "helm"})
    for where, deploy in blocks.items():
        helm_upgrade.previous_spec(deploy, field=f"{where}.upgrade_from", source=profile.source)
