"""The driver's own opaque configuration, ``gpu.dra-conformance.test/v1alpha1`` kind ``GpuConfig``::

    apiVersion: gpu.dra-conformance.test/v1alpha1
    kind: GpuConfig
    sharing:
      strategy: TimeSlicing            # TimeSlicing | SpacePartitioning | Exclusive
      timeSlicing: {interval: Short}   # Default | Short | Medium | Long (TimeSlicing only)
      spacePartitioning: {partitionCount: 2}   # 1..8 (SpacePartitioning only)
    env: {MY_SETTING: "value"}         # extra container env; names are C identifiers, DRA_ is reserved

Validation is strict: an unknown kind, field or value is an error that names it. Configs are merged in
order (class configs first, then claim configs): a later ``sharing`` replaces an earlier one, ``env`` is
merged key by key. Source: resource.k8s.io/v1 OpaqueDeviceConfiguration (parameters, raw <= 10 KiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import CONFIG_API_VERSION

KIND = "GpuConfig"
STRATEGIES = ("TimeSlicing", "SpacePartitioning", "Exclusive")
INTERVALS = ("Default", "Short", "Medium", "Long")
DEFAULT_STRATEGY = "TimeSlicing"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(ValueError):
    """Invalid opaque configuration; the message names the field and the accepted values."""


@dataclass(frozen=True)
class Sharing:
    """Validated ``sharing`` block."""

    strategy: str = DEFAULT_STRATEGY
    interval: str | None = None
    partition_count: int | None = None


@dataclass(frozen=True)
class GpuConfig:
    """One validated GpuConfig; ``sharing`` is None when the object did not set it."""

    sharing: Sharing | None = None
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def merged(self, later: GpuConfig) -> GpuConfig:
        """This config overridden by ``later`` (later sharing wins; env merged by name, later wins)."""
        env = dict(self.env)
        env.update(dict(later.env))
        return GpuConfig(sharing=later.sharing or self.sharing, env=tuple(sorted(env.items())))


def _unknown(obj: dict, known: set[str], where: str) -> None:
    extra = sorted(set(obj) - known)
    if extra:
        raise ConfigError(f"{where}: unknown field(s) {extra}; known fields: {sorted(known)}")


def parse(params: object, where: str = "parameters") -> GpuConfig:
    """Validate opaque ``parameters`` (already-decoded JSON). Raises ConfigError naming the bad input."""
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: expected a JSON object with apiVersion {CONFIG_API_VERSION!r} and kind {KIND!r}")
    api_version, kind = params.get("apiVersion"), params.get("kind")
    if api_version != CONFIG_API_VERSION:
        raise ConfigError(f"{where}: unknown apiVersion {api_version!r}; expected {CONFIG_API_VERSION!r}")
    if kind != KIND:
        raise ConfigError(f"{where}: unknown kind {kind!r}; expected {KIND!r}")
    _unknown(params, {"apiVersion", "kind", "sharing", "env"}, where)
    sharing = _sharing(params["sharing"], f"{where}.sharing") if "sharing" in params else None
    return GpuConfig(sharing=sharing, env=_env(params.get("env") or {}, f"{where}.env"))


def _sharing(raw: object, where: str) -> Sharing:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object")
    _unknown(raw, {"strategy", "timeSlicing", "spacePartitioning"}, where)
    strategy = raw.get("strategy")
    if strategy not in STRATEGIES:
        raise ConfigError(f"{where}.strategy: unknown value {strategy!r}; expected one of {list(STRATEGIES)}")
    interval = count = None
    if "timeSlicing" in raw:
        if strategy != "TimeSlicing":
            raise ConfigError(f"{where}.timeSlicing: only allowed with strategy TimeSlicing, not {strategy}")
        ts = raw["timeSlicing"]
        if not isinstance(ts, dict):
            raise ConfigError(f"{where}.timeSlicing: expected an object")
        _unknown(ts, {"interval"}, f"{where}.timeSlicing")
        interval = ts.get("interval", "Default")
        if interval not in INTERVALS:
            raise ConfigError(
                f"{where}.timeSlicing.interval: unknown value {interval!r}; expected one of {list(INTERVALS)}"
            )
    if "spacePartitioning" in raw:
        if strategy != "SpacePartitioning":
            raise ConfigError(
                f"{where}.spacePartitioning: only allowed with strategy SpacePartitioning, not {strategy}"
            )
        sp = raw["spacePartitioning"]
        if not isinstance(sp, dict):
            raise ConfigError(f"{where}.spacePartitioning: expected an object")
        _unknown(sp, {"partitionCount"}, f"{where}.spacePartitioning")
        count = sp.get("partitionCount", 1)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 8:
            raise ConfigError(f"{where}.spacePartitioning.partitionCount: {count!r}; expected an integer 1..8")
    return Sharing(strategy=strategy, interval=interval, partition_count=count)


def _env(raw: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object of NAME: value")
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ConfigError(f"{where}: {name!r} is not a valid env var name (C identifier)")
        if name.startswith("DRA_"):
            raise ConfigError(f"{where}: {name!r} uses the reserved prefix DRA_ (set by the driver)")
        if not isinstance(value, (str, int, float, bool)):
            raise ConfigError(f"{where}.{name}: expected a string, number or boolean")
        out.append((name, str(value).lower() if isinstance(value, bool) else str(value)))
    return tuple(sorted(out))
