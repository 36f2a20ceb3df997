"""The profile's ``cdi_identity`` section: what the CDI spec of an allocated device must contain, as patterns
keyed by the device's published attributes. Pure.

Shape (every key optional, at least one entry in all)::

    cdi_identity:
      device_nodes: ['/dev/dri/card{index}']      # container paths of CDI deviceNodes (``path``)
      env: ['NVIDIA_VISIBLE_DEVICES={uuid}']      # CDI env entries, NAME=value
      mounts: ['/run/gpu/{uuid}']                 # container paths of CDI mounts (``containerPath``)
      host_device_nodes: ['/dev/{hostNode}']      # host nodes behind the device nodes (``hostPath``, which
                                                  # defaults to ``path``); default: the device_nodes patterns

A placeholder ``{name}`` is a declared attribute (``attributes``; unqualified names get the driver's domain,
qualified ones such as ``{resource.kubernetes.io/pciBusID}`` are kept), ``{device}`` (the device name) or
``{pool}``. Rendered for the allocated device, each entry must be in the CDI edits the runtime applies for its
claim, and no entry rendered for another device of the node may be (conformance/node/cdi_identity.py).
Source: CDI SPEC.md ``containerEdits`` (``env``, ``deviceNodes[].path`` and ``.hostPath``, ``mounts[].containerPath``);
issue 24 §3 "device identity beyond env".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conformance.core.errors import ConfigError

KEYS = ("device_nodes", "env", "mounts", "host_device_nodes")
BUILT_IN = ("device", "pool")  # placeholders that are not attributes
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
FIX = "cdi_identity: {device_nodes: ['/dev/dri/card{index}'], env: ['GPU_UUID={uuid}'], mounts: ['/run/gpu{index}']}"


def parse(raw: Mapping, attributes: Mapping, driver: str, src: str) -> dict[str, tuple[str, ...]]:
    """``{key: (template, ...)}`` of ``cdi_identity`` (``{}`` when absent), keys from :data:`KEYS`. Raises
    ConfigError naming ``cdi_identity[.key[i]]`` when the section is not a mapping of lists of strings, holds
    an unknown key or nothing, an ``env`` entry lacks ``NAME=``, a path is not absolute, a template has no
    placeholder (it would name every device alike) or names an attribute the profile does not declare."""
    section = raw.get("cdi_identity")
    if section is None:
        return {}
    if not isinstance(section, Mapping) or set(section) - set(KEYS):
        unknown = sorted(set(section) - set(KEYS)) if isinstance(section, Mapping) else section
        raise ConfigError(
            f"must be a mapping of {', '.join(KEYS)}; got {unknown!r}", source=src, field="cdi_identity", fix=FIX
        )
    out = {key: _templates(section, key, attributes, driver, src) for key in KEYS if key in section}
    if not any(out.values()):
        raise ConfigError("gives no pattern", source=src, field="cdi_identity", fix=f"{FIX}, or leave it out")
    return {k: v for k, v in out.items() if v}


def _templates(section: Mapping, key: str, attributes: Mapping, driver: str, src: str) -> tuple[str, ...]:
    values = section.get(key) or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(
            f"must be a list of strings, got {values!r}", source=src, field=f"cdi_identity.{key}", fix=FIX
        )
    declared = {qualify(driver, str(a)) for a in attributes}
    for i, value in enumerate(values):
        field = f"cdi_identity.{key}[{i}]"
        names = PLACEHOLDER.findall(value)
        if key == "env" and not re.match(r"^[A-Za-z_][A-Za-z0-9_{}]*=", value):
            raise ConfigError(f"not an env entry NAME=value: {value!r}", source=src, field=field, fix=FIX)
        if key != "env" and not value.startswith("/"):
            raise ConfigError(f"not an absolute container path: {value!r}", source=src, field=field, fix=FIX)
        if not names:
            raise ConfigError(
                f"{value!r} has no placeholder, so every device would render it alike",
                source=src,
                field=field,
                fix="name an attribute that tells devices apart, e.g. {index} or {uuid}",
            )
        for name in names:
            if name not in BUILT_IN and qualify(driver, name) not in declared:
                raise ConfigError(
                    f"placeholder {{{name}}} is neither a declared attribute nor one of {', '.join(BUILT_IN)}",
                    source=src,
                    field=field,
                    fix=f"declare it under attributes (e.g. attributes: {{{name}: string}}) or fix its spelling",
                )
    return tuple(values)


def qualify(driver: str, name: str) -> str:
    """An attribute name qualified with the driver's domain (``index`` -> ``<driver>/index``)."""
    return name if "/" in name else f"{driver}/{name}"


def render(template: str, driver: str, device: str, pool: str, attributes: Mapping[str, Any]) -> str:
    """``template`` with each placeholder replaced by the device's value (``attributes`` keyed by qualified
    name, as published). Raises LookupError naming the device and the attribute it does not publish."""

    def value(match: re.Match) -> str:
        name = match.group(1)
        if name in BUILT_IN:
            return device if name == "device" else pool
        qualified = qualify(driver, name)
        if qualified not in attributes:
            raise LookupError(f"device {pool}/{device} publishes no attribute {qualified} (cdi_identity {template!r})")
        found = attributes[qualified]
        return str(found).lower() if isinstance(found, bool) else str(found)

    return PLACEHOLDER.sub(value, template)


# profile keys that turn a capability on by giving a pattern (capability driver.<key>)
PROFILE_PATTERNS = ("cdi_identity", "consumed_capacity_signal")


def availability(key: str, profile, src: str) -> tuple[bool, str]:
    """``(available, evidence)`` of capability ``driver.<key>`` (``key`` in :data:`PROFILE_PATTERNS`) for
    ``profile`` (a DriverProfile; ``src`` names it). ``cdi_identity``: available when the profile gives a
    pattern and does not declare ``cdi: false``. ``consumed_capacity_signal``: unavailable here, only called
    without a signal (with one the capability is ``consumable_capacity``'s: conformance/core/capabilities.py)."""
    if key == "consumed_capacity_signal":
        return False, f"{src} names no consumed_capacity_signal (granted capacity not shown: publish-only)"
    if profile.capabilities.get("cdi") is False:
        return False, f"{src} declares cdi: false (no CDI spec to judge)"
    if not profile.cdi_identity:
        return False, f"{src} gives no cdi_identity pattern (what a device's CDI edits carry: untested)"
    return True, f"{src} gives cdi_identity {dict(profile.cdi_identity)}; held to it"
