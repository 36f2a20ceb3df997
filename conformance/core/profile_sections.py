"""Checks of single sections of a driver profile, split from :func:`conformance.core.profile.parse`.

Each takes the raw profile (or section) mapping and the profile's source, and raises
:class:`~conformance.core.errors.ConfigError` naming the file, the dotted field and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conformance.core import profile_checks
from conformance.core.errors import ConfigError

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _req(raw: Mapping, key: str, typ: type | tuple, src: str, fix: str) -> Any:
    if key not in raw:
        raise ConfigError("is required", source=src, field=key, fix=fix)
    value = raw[key]
    if not isinstance(value, typ) or isinstance(value, bool) and typ is int:
        raise ConfigError(
            f"must be {getattr(typ, '__name__', typ)}, got {type(value).__name__} {value!r}",
            source=src,
            field=key,
            fix=fix,
        )
    return value


def identity(raw: Mapping, src: str) -> tuple[str, str, list]:
    """``(name, driver, device_classes)``: required; the driver and each class a DNS subdomain."""
    name = _req(raw, "name", str, src, "name: my-driver")
    driver = _req(raw, "driver", str, src, "driver: gpu.example.com (the ResourceSlice spec.driver)")
    if not _DNS_SUBDOMAIN.match(driver) or len(driver) > 63:
        raise ConfigError(
            f"{driver!r} is not a DNS subdomain of at most 63 characters",
            source=src,
            field="driver",
            fix="e.g. gpu.example.com",
        )
    classes = _req(raw, "device_classes", list, src, "device_classes: [gpu.example.com]")
    if not classes or not all(isinstance(c, str) and _DNS_SUBDOMAIN.match(c) for c in classes):
        raise ConfigError(
            f"must be a non-empty list of DeviceClass names, got {classes!r}",
            source=src,
            field="device_classes",
            fix="device_classes: [gpu.example.com]",
        )
    return name, driver, classes


def devices_per_node(raw: Mapping, src: str) -> int:
    """``devices_per_node`` (default 1): an integer ≥ 1."""
    per_node = raw.get("devices_per_node", 1)
    if not isinstance(per_node, int) or isinstance(per_node, bool) or per_node < 1:
        raise ConfigError(
            f"must be an integer ≥ 1, got {per_node!r}", source=src, field="devices_per_node", fix="devices_per_node: 2"
        )
    return per_node


def check_visibility(vis: Mapping, src: str) -> None:
    """Known keys only; ``names_devices`` a bool not contradicting ``device_attribute``; at least one of
    ``env_regex`` / ``expected_output``, each a valid regex."""
    profile_checks.unknown_keys(vis, profile_checks.VISIBILITY_KEYS, src, "visibility")
    if not isinstance(vis.get("names_devices", True), bool):
        raise ConfigError(
            f"must be true or false, got {vis['names_devices']!r}",
            source=src,
            field="visibility.names_devices",
            fix="names_devices: false only when the probe output cannot name a device (it then proves visibility "
            "only); leave it out otherwise",
        )
    if vis.get("names_devices") is False and vis.get("device_attribute"):
        raise ConfigError(
            "names_devices: false contradicts device_attribute (the probe names devices by that attribute)",
            source=src,
            field="visibility.names_devices",
            fix="drop one of the two",
        )
    if not vis.get("env_regex") and not vis.get("expected_output"):
        raise ConfigError(
            "needs env_regex or expected_output",
            source=src,
            field="visibility",
            fix="e.g. visibility: {env_regex: '^GPU_DEVICE_[0-9]+='}",
        )
    for key in ("env_regex", "expected_output"):
        if vis.get(key):
            try:
                re.compile(vis[key])
            except re.error as exc:
                raise ConfigError(
                    f"invalid regex: {exc}",
                    source=src,
                    field=f"visibility.{key}",
                    fix="write a Python regular expression",
                ) from None
