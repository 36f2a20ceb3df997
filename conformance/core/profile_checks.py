"""Checks of a driver profile that catch mistakes which used to pass silently (issue 22 §3), split from
:func:`conformance.core.profile.parse`.

Each function takes the raw profile (or one of its sections) and the profile's source and raises
:class:`~conformance.core.errors.ConfigError` naming the file, the dotted key and the fix: unknown keys get
"did you mean" (:func:`unknown_keys`, difflib); ``requires_hardware`` must be a YAML boolean (the string
``"false"`` is true in Python); ``opaque_config`` takes only ``parameters`` and ``shows_as``, and a profile that
declares ``capabilities.opaque_config: true`` must give ``parameters``; ``visibility.device_attribute`` must be
one of the declared ``attributes``; ``capabilities.extended_resource_name`` must be a domain-prefixed name
(Kubernetes extended resources: ``example.com/gpu``, outside ``kubernetes.io``); ``node_selector`` is removed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.core.errors import ConfigError

OPAQUE_KEYS = ("parameters", "shows_as", "override")
VISIBILITY_KEYS = ("command", "env_regex", "expected_output", "image", "device_attribute", "names_devices")
REMOVED_KEYS = {
    "node_selector": "remove it: the run uses the nodes where the driver's ResourceSlices publish devices (on a "
    "mixed cluster the driver runs, and publishes, only on its GPU nodes); select the driver's nodes in its own "
    "deployment (e.g. the chart's nodeSelector under deploy.values)",
}
# Kubernetes extended resource names (k8s.io/apimachinery IsExtendedResourceName, API conventions): a DNS
# subdomain prefix outside kubernetes.io, '/', a name of at most 63 characters; "requests." is reserved
_EXTENDED = re.compile(r"^(?!requests\.)[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def unknown_keys(found: Iterable[Any], allowed: Iterable[str], src: str, prefix: str = "") -> None:
    """ConfigError for the first key of ``found`` not in ``allowed``, naming ``prefix.key`` and, when one is
    close (difflib.get_close_matches), "did you mean X"; the fix lists the allowed keys."""
    allowed = sorted(allowed)
    unknown = sorted(str(k) for k in set(found) - set(allowed))
    if not unknown:
        return
    key = unknown[0]
    field = f"{prefix}.{key}" if prefix else key
    if key in REMOVED_KEYS and not prefix:
        raise ConfigError(f"{key!r} was removed", source=src, field=field, fix=REMOVED_KEYS[key])
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"unknown field(s) {unknown}{hint}", source=src, field=field, fix=f"use only {', '.join(allowed) or '(none)'}"
    )


def requires_hardware(raw: Mapping, src: str) -> bool:
    """``requires_hardware`` (default false): a YAML boolean, not a string."""
    value = raw.get("requires_hardware", False)
    if not isinstance(value, bool):
        raise ConfigError(
            f"must be true or false (a YAML boolean), got {type(value).__name__} {value!r}",
            source=src,
            field="requires_hardware",
            fix="requires_hardware: true (unquoted; the string 'false' would read as true)",
        )
    return value


def opaque_config(raw: Mapping, src: str, declared: bool) -> tuple[dict, str]:
    """``(parameters, shows_as)`` of ``opaque_config``: only :data:`OPAQUE_KEYS`; ``parameters`` a mapping
    (an opaque driver config object: apiVersion, kind, ...), required when ``declared``
    (``capabilities.opaque_config: true``); ``shows_as`` a regex."""
    section = raw.get("opaque_config") or {}
    fix = "opaque_config: {parameters: {apiVersion: gpu.example.com/v1, kind: GpuConfig, ...}, shows_as: '^REGEX$'}"
    if not isinstance(section, Mapping):
        raise ConfigError(f"must be a mapping, got {section!r}", source=src, field="opaque_config", fix=fix)
    unknown_keys(section, OPAQUE_KEYS, src, "opaque_config")
    params = section.get("parameters") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"must be a mapping, got {params!r}", source=src, field="opaque_config.parameters", fix=fix)
    if declared and not params:
        raise ConfigError(
            "capabilities.opaque_config is true but the profile gives no opaque_config.parameters sample",
            source=src,
            field="opaque_config.parameters",
            fix=f"add {fix}, or set capabilities.opaque_config: false (a waiver)",
        )
    shows_as = section.get("shows_as") or ""
    try:
        re.compile(str(shows_as))
    except re.error as exc:
        raise ConfigError(f"invalid regex: {exc}", source=src, field="opaque_config.shows_as", fix=fix) from None
    return dict(params), str(shows_as)


def opaque_override(raw: Mapping, src: str) -> tuple[dict, str]:
    """``(parameters, shows_as)`` of ``opaque_config.override`` (``({}, "")`` when absent): a second config
    sample that, given after the main one, replaces what the main one shows (the config precedence tests: class
    config first, claim config wins). Both keys are required together; ``shows_as`` must compile. Required
    whenever the main sample is observable (``parameters`` and ``shows_as`` given): without it the precedence
    test would skip and a driver applying the class config last would pass (breaker finding 5). Raises
    ConfigError naming ``opaque_config.override`` and the fix."""
    main = raw.get("opaque_config") or {}
    section = main.get("override") or {} if isinstance(main, Mapping) else {}
    fix = "opaque_config: {..., override: {parameters: {...another value...}, shows_as: '^REGEX$'}}"
    waived = (raw.get("capabilities") or {}).get("opaque_config") is False
    if not section and not waived and isinstance(main, Mapping) and main.get("parameters") and main.get("shows_as"):
        raise ConfigError(
            "opaque_config gives parameters and shows_as but no override sample, so the claim-wins-over-class "
            "test cannot run",
            source=src,
            field="opaque_config.override",
            fix=f"add {fix} (the same config with another value the probe shows), or set "
            "capabilities.opaque_config: false (a waiver)",
        )
    if not isinstance(section, Mapping) or set(section) - {"parameters", "shows_as"}:
        raise ConfigError(
            f"must be a mapping of parameters, shows_as; got {section!r}",
            source=src,
            field="opaque_config.override",
            fix=fix,
        )
    params, shows_as = section.get("parameters") or {}, str(section.get("shows_as") or "")
    if section and (not isinstance(params, Mapping) or not params or not shows_as):
        raise ConfigError(
            "needs both parameters (a mapping) and shows_as", source=src, field="opaque_config.override", fix=fix
        )
    try:
        re.compile(shows_as)
    except re.error as exc:
        raise ConfigError(
            f"invalid regex: {exc}", source=src, field="opaque_config.override.shows_as", fix=fix
        ) from None
    return dict(params), shows_as


def device_attribute(vis: Mapping, attributes: Mapping, driver: str, src: str) -> None:
    """``visibility.device_attribute`` must be one of ``attributes`` (qualified and unqualified names of the
    driver's domain are the same attribute: resource.k8s.io/v1 QualifiedName)."""
    name = vis.get("device_attribute")
    if not name:
        return

    def qualified(a: str) -> str:
        return a if "/" in a else f"{driver}/{a}"

    if qualified(str(name)) not in {qualified(str(a)) for a in attributes}:
        raise ConfigError(
            f"{name!r} is not among the declared attributes ({', '.join(map(str, attributes)) or 'none'})",
            source=src,
            field="visibility.device_attribute",
            fix=f"declare it under attributes (e.g. attributes: {{{name}: string}}) or fix its spelling",
        )


def extended_resource_name(value: Any, src: str) -> str:
    """``capabilities.extended_resource_name``: "" or a domain-prefixed extended resource name."""
    if value in (None, ""):
        return ""
    field = "capabilities.extended_resource_name"
    if not isinstance(value, str):
        raise ConfigError("must be a string", source=src, field=field, fix="extended_resource_name: example.com/gpu")
    domain = value.split("/", 1)[0]
    if not _EXTENDED.match(value) or domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        raise ConfigError(
            f"{value!r} is not an extended resource name (a domain prefix outside kubernetes.io, '/', a name)",
            source=src,
            field=field,
            fix="extended_resource_name: example.com/gpu (the name the DeviceClass spec.extendedResourceName maps)",
        )
    return value


def health_switch(raw: Mapping, src: str) -> str:
    """The Node annotation key template of ``health_switch`` (``""`` when absent): ``{node_annotation:
    '{driver}/unhealthy'}`` says the driver reports the devices named (comma-separated) in that annotation of
    their node Unhealthy in its DRAResourceHealth stream, and Healthy again once it is removed (the
    health-transition test, KEP-4680). ``{driver}`` becomes the driver name. Raises ConfigError naming the key
    and the fix."""
    section = raw.get("health_switch") or {}
    fix = "health_switch: {node_annotation: '{driver}/unhealthy'}  (a key the driver reads; or leave it out)"
    if not section:
        return ""
    if not isinstance(section, Mapping) or set(section) != {"node_annotation"}:
        raise ConfigError(
            f"must be a mapping with only node_annotation, got {section!r}", source=src, field="health_switch", fix=fix
        )
    key = section["node_annotation"]
    if not isinstance(key, str) or not re.fullmatch(r"([a-z0-9{}.-]+/)?[A-Za-z0-9{}._-]+", key):
        raise ConfigError(
            f"not an annotation key (prefix/name): {key!r}", source=src, field="health_switch.node_annotation", fix=fix
        )
    return key


def consumed_capacity_signal(raw: Mapping, src: str) -> str:
    """``consumed_capacity_signal`` (``""`` when absent): a regex, matched per line against the probe output of a
    container whose claim holds a share of a multi-allocatable device, in which ``{value}`` stands for the
    share's ``consumedCapacity`` quantity as the allocation records it (e.g. ``'^GPU_MEMORY_LIMIT={value}$'``):
    how the driver shows the capacity it granted, so a test sees real use, not only what was published and
    allocated (KEP-5075 consumedCapacity; issue 24 §3). Raises ConfigError naming the key when it is not a
    string holding ``{value}`` or does not compile once ``{value}`` is filled in."""
    value = raw.get("consumed_capacity_signal")
    fix = "consumed_capacity_signal: '^GPU_MEMORY_LIMIT={value}$' (or leave it out: capacity then stays publish-only)"
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or "{value}" not in value:
        raise ConfigError(
            f"must be a regex holding {{value}}, got {value!r}", source=src, field="consumed_capacity_signal", fix=fix
        )
    try:
        re.compile(value.replace("{value}", "1Gi"))
    except re.error as exc:
        raise ConfigError(
            f"not a regular expression: {exc}", source=src, field="consumed_capacity_signal", fix=fix
        ) from None
    return value
