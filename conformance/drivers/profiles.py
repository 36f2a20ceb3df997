"""Finding and loading driver profiles: ``--driver NAME`` (fixtures/drivers/NAME.yaml) or ``--driver PATH``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from conformance import shipped
from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.drivers import helm_upgrade, surge

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
    their ``deploy`` keys (see :func:`conformance.core.profile.parse`). Raises ConfigError (file, field, fix), also
    for a file that is not UTF-8 text."""
    path = resolve(driver)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:  # a shipped profile saved as Latin-1 or UTF-16 by an editor
        raise ConfigError(
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            source=str(path),
            fix="save the file as UTF-8",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"is not valid YAML: {exc}", source=str(path), fix="fix the YAML syntax") from None
    profile = schema.parse(raw, source=str(path), extra_modes=extra_modes)
    check_file(profile, path)
    check_upgrade_from(profile)
    for where, deploy in {
        "deploy": profile.deploy,
        **{f"deploy_alternatives.{m}": d for m, d in profile.deploy_alternatives.items()},
    }.items():
        surge.declared(deploy, field=f"{where}.{surge.KEY}", source=profile.source)  # refuses a bad value now
    return profile


# deploy keys naming a file or directory, resolved as the deployers do (shipped.resolve_path)
PATH_KEYS = ("chart", "dir", "devices", "device_classes_dir")
_REPO_CHART = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_]*/[A-Za-z0-9][-A-Za-z0-9_.]*$")  # helm's "repo/chart" form


def check_file(profile: schema.DriverProfile, path: Path) -> None:
    """What needs the profile's file (issue 22 §3): its ``name`` equals the file stem (``--driver NAME`` finds
    ``NAME.yaml``; reports name the profile), and every relative path of ``deploy`` / ``deploy_alternatives.*``
    (:data:`PATH_KEYS`) exists where the deployer looks (:func:`conformance.shipped.resolve_path`: beside the
    profile, the current directory, the package root). Not a path: ``oci://``/``https://`` URLs, a
    ``{go_module, path}`` mapping, helm's ``repo/chart`` form that exists nowhere locally, an empty value.
    Raises ConfigError naming the file, the dotted key and the fix."""
    if path.suffix in (".yaml", ".yml") and profile.name != path.stem:
        raise ConfigError(
            f"name {profile.name!r} differs from the file name {path.name!r}",
            source=str(path),
            field="name",
            fix=f"name: {path.stem} (or rename the file {profile.name}{path.suffix})",
        )
    blocks = {"deploy": profile.deploy} | {
        f"deploy_alternatives.{m}": d for m, d in profile.deploy_alternatives.items()
    }
    for where, deploy in blocks.items():
        files = deploy.get("values_files") or []
        items = [(key, deploy.get(key)) for key in PATH_KEYS if not (key == "chart" and deploy.get("repo"))]
        items += [(f"values_files[{i}]", f) for i, f in enumerate(files if isinstance(files, list) else [files])]
        for key, value in items:  # a chart with ``repo`` is a name in that repository, not a path
            if not isinstance(value, str) or not value or "://" in value:
                continue
            if shipped.resolve_path(value, str(path)) is None and not (key == "chart" and _REPO_CHART.match(value)):
                raise ConfigError(
                    f"{value!r} exists neither beside the profile ({path.parent}), in the current directory nor "
                    f"under {shipped.SOURCE_ROOT}",
                    source=str(path),
                    field=f"{where}.{key}",
                    fix="give a path relative to the profile file, an absolute path"
                    + (", an oci:// chart or a helm repo/chart name" if key == "chart" else ""),
                )


def check_upgrade_from(profile: schema.DriverProfile) -> None:
    """Refuse a bad ``upgrade_from`` (the upgrade lane's previous version) of the profile's helm deploy block or
    its ``deploy_alternatives.helm`` now, before any cluster starts, with the check the upgrade lane itself
    applies (:func:`conformance.drivers.helm_upgrade.previous_spec`). Raises ConfigError naming the profile
    file, the field and the fix."""
    blocks = {"deploy": profile.deploy} if profile.deploy_mode == "helm" else {}
    blocks.update({f"deploy_alternatives.{m}": d for m, d in profile.deploy_alternatives.items() if m == "helm"})
    for where, deploy in blocks.items():
        helm_upgrade.previous_spec(deploy, field=f"{where}.upgrade_from", source=profile.source)
