"""The JSON Schema of a driver profile, generated from the parser's own tables (one source of truth).

The key lists come from :mod:`conformance.core.profile` (:data:`~conformance.core.profile.TOP_KEYS`,
:data:`~conformance.core.profile.ATTRIBUTE_TYPES`, :data:`~conformance.core.profile.BOOL_CAPABILITIES`,
:data:`~conformance.core.profile.DEPLOY_KEYS`) and :mod:`conformance.core.profile_checks`
(:data:`~conformance.core.profile_checks.VISIBILITY_KEYS`, :data:`~conformance.core.profile_checks.OPAQUE_KEYS`);
this module adds only each key's JSON type and description. The parser stays the judge (it also checks what a
schema cannot: regexes compile, ``device_attribute`` among ``attributes``, a sample for ``opaque_config: true``);
the schema serves editors (yaml-language-server completion and hover). It is published as
``conformance/core/profile.schema.json`` (package data of the wheel; tests/harness/test_profile_schema.py keeps it
equal to :func:`generate`) and printed by ``dra-conformance profile schema``. JSON Schema draft 2020-12.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.core import profile, profile_checks

PUBLISHED = Path(__file__).with_name("profile.schema.json")
_STR = {"type": "string"}
_DNS = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
# each top-level key's schema, except those built from the tables below (a key of TOP_KEYS missing from both
# makes generate() raise KeyError: the unit test catches a parser key without a schema)
_TOP = {
    "name": {**_STR, "description": "the profile's name: its file stem (--driver NAME finds NAME.yaml)"},
    "driver": {**_DNS, "maxLength": 63, "description": "the driver name: ResourceSlice spec.driver"},
    "description": _STR,
    "notes": {"description": "free text for humans"},
    "version": {"type": ["string", "number"], "description": "the driver version this profile describes"},
    "device_classes": {
        "type": "array",
        "items": _DNS,
        "minItems": 1,
        "description": "DeviceClass names; the first is the one tests use",
    },
    "devices_per_node": {"type": "integer", "minimum": 1, "description": "at least this many on each driver node"},
    "requires_hardware": {
        "type": "boolean",
        "description": "true: the driver needs real devices; a run on a cluster it creates (local, kind) is refused",
    },
    "admin_access_signal": {**_STR, "description": "regex (per line) a container of an adminAccess claim shows"},
    "binding_failure_device": {
        **_STR,
        "pattern": r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        "description": "a device (in every pool) whose attach this deployment makes fail (KEP-5007)",
    },
    "health_switch": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "node_annotation": {
                **_STR,
                "description": "a Node annotation key ({driver}: the driver name) whose comma-separated device "
                "names the driver reports Unhealthy until it is removed (KEP-4680 health transition)",
            }
        },
        "required": ["node_annotation"],
    },
}
_TOP["cdi_identity"] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        key: {"type": "array", "items": _STR, "description": what}
        for key, what in (
            ("device_nodes", "container paths of the CDI deviceNodes, e.g. /dev/dri/card{index}"),
            ("env", "CDI env entries NAME=value, e.g. GPU_UUID={uuid}"),
            ("mounts", "container paths of the CDI mounts"),
            ("host_device_nodes", "host nodes behind the CDI deviceNodes (hostPath); default: device_nodes"),
        )
    },
    "description": "what the CDI edits of an allocated device carry; {attribute}, {device}, {pool} placeholders",
}
_TOP["consumed_capacity_signal"] = {
    **_STR,
    "description": "regex (per line) with {value}: how a container of a share shows its consumedCapacity (KEP-5075)",
}
_VISIBILITY_TYPES = {"names_devices": {"type": "boolean"}}


def _attributes() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": {"enum": list(profile.ATTRIBUTE_TYPES)},
        "description": "attribute name (unqualified = the driver's domain) -> published value type",
    }


def _closed(keys, types: dict | None = None, description: str = "") -> dict[str, Any]:
    """An object taking only ``keys`` (strings unless ``types`` says otherwise)."""
    out = {
        "type": "object",
        "properties": {k: (types or {}).get(k, {}) for k in sorted(keys)},
        "additionalProperties": False,
    }
    return {**out, "description": description} if description else out


def _capabilities() -> dict[str, Any]:
    types = dict.fromkeys(profile.BOOL_CAPABILITIES, {"type": "boolean"})
    types["extended_resource_name"] = {"type": ["string", "null"], "description": "e.g. example.com/gpu (KEP-5004)"}
    return _closed(types, types, "true: tests run and the verdict holds the driver to it; false: a listed waiver")


def _deploy_mode(mode: str, keys) -> dict[str, Any]:
    return _closed({*keys, "mode"}, {"mode": {"const": mode}}, f"deploy mode {mode}")


def _deploy() -> dict[str, Any]:
    modes = profile.DEPLOY_KEYS
    return {
        "type": "object",
        "properties": {"mode": {"enum": list(modes), "default": "preinstalled"}},
        "required": [],
        "allOf": [
            {"if": {"properties": {"mode": {"const": m}}, "required": ["mode"]}, "then": _deploy_mode(m, keys)}
            for m, keys in modes.items()
        ]
        + [{"if": {"not": {"required": ["mode"]}}, "then": {"maxProperties": 0}}],
        "description": "how the run installs the driver (mode-specific keys; plugins may register more modes)",
    }


def _deploy_alternatives() -> dict[str, Any]:
    props = {m: _closed({*keys, "mode"}, {"mode": {"const": m}}) for m, keys in profile.DEPLOY_KEYS.items()}
    return {"type": "object", "properties": props, "description": "what --driver-deploy MODE uses"}


def generate() -> dict[str, Any]:
    """The profile JSON Schema (a dict); raises KeyError for a key of ``profile.TOP_KEYS`` without a schema."""
    built = {
        "attributes": _attributes(),
        "visibility": _closed(profile_checks.VISIBILITY_KEYS, _VISIBILITY_TYPES),
        "opaque_config": _closed(
            profile_checks.OPAQUE_KEYS,
            {
                "parameters": {"type": "object"},
                "shows_as": _STR,
                "override": {
                    "type": "object",
                    "properties": {"parameters": {"type": "object"}, "shows_as": _STR},
                    "additionalProperties": False,
                    "description": "a second sample whose shows_as replaces the first's when given after it",
                },
            },
        ),
        "capabilities": _capabilities(),
        "deploy": _deploy(),
        "deploy_alternatives": _deploy_alternatives(),
    }
    for key in ("command", "env_regex", "expected_output", "image", "device_attribute"):
        built["visibility"]["properties"][key] = _STR
    props = {key: built[key] if key in built else _TOP[key] for key in sorted(profile.TOP_KEYS)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dra-conformance driver profile",
        "description": "A driver profile (conformance/core/profile.py); check one with `dra-conformance profile check`",
        "type": "object",
        "required": ["name", "driver", "device_classes", "visibility"],
        "properties": props,
        "additionalProperties": False,
    }


def text() -> str:
    """:func:`generate` as the JSON text of :data:`PUBLISHED` (2-space indent, a final newline)."""
    return json.dumps(generate(), indent=2) + "\n"
