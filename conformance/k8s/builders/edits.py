"""Edited copies of stored objects for updates and patches: one more label, a changed field, a slice with
one more device, a DeviceClass with other selectors, and the bodies of the four patch types.

Sources: Kubernetes API conventions (json patch RFC 6902 with ``~1`` escaping, merge/strategic-merge patch,
server-side apply of a partial object); upstream test/e2e/dra/dra.go "CRUD Tests" (a ResourceSlice gains
``device-0``, a DeviceClass's selector is updated, a claim's status gets ``allocation: {}``).
"""

from __future__ import annotations

from typing import Any

from conformance.core.objects import Obj
from conformance.k8s.builders.parts import cel_selectors, device

PATCH_TYPES = ("json", "merge", "strategic", "apply")
ADDED_DEVICE = "dev-0"


def with_field(obj: Obj, path: str, value: Any) -> Obj:
    """A copy of ``obj`` (with its resourceVersion) whose dotted ``path`` (list indexes as numbers, e.g.
    ``spec.devices.requests.0.exactly.count``) is set to ``value``. Every step but the last must exist, so a
    mistyped path fails here instead of sending an unknown field: raises KeyError/IndexError naming the path."""
    raw = obj.to_dict()
    cur: Any = raw
    parts = path.split(".")
    try:
        for part in parts[:-1]:
            cur = cur[int(part)] if part.isdigit() else cur[part]
    except (KeyError, IndexError, TypeError) as exc:
        raise KeyError(f"{obj.kind} {obj.name}: no {path!r} to set ({type(exc).__name__}: {exc})") from None
    last = parts[-1]
    cur[int(last) if last.isdigit() else last] = value
    return Obj(raw)


def with_label(obj: Obj, key: str, value: str) -> Obj:
    """A copy of ``obj`` (with its resourceVersion) carrying one more label, for an update."""
    return with_field(obj, "metadata.labels", {**obj.labels, key: value})


def with_added_device(slice_obj: Obj) -> Obj:
    """A copy of a test-made ResourceSlice with one more device (the upstream CRUD test's update)."""
    return with_field(slice_obj, "spec.devices", list(slice_obj.get("spec.devices") or []) + [device(ADDED_DEVICE)])


def with_selectors(device_class: Obj, *expressions: str) -> Obj:
    """A copy of a DeviceClass whose selectors are exactly ``expressions`` (DeviceClass spec is mutable)."""
    return with_field(device_class, "spec.selectors", cel_selectors(list(expressions)))


def _applied(obj: Obj, **fields: Any) -> Obj:
    """The partial object server-side apply needs: apiVersion, kind, name, namespace, plus ``fields``."""
    meta = {"name": obj.name, **fields.pop("metadata", {})}
    if obj.namespace:
        meta["namespace"] = obj.namespace
    return Obj({"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta, **fields})


def label_patch(obj: Obj, patch_type: str, key: str, value: str):
    """The body that sets label ``key`` = ``value`` on ``obj`` with ``patch_type`` (see PATCH_TYPES)."""
    if patch_type == "json":
        return [{"op": "add", "path": "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1"), "value": value}]
    if patch_type in ("merge", "strategic"):
        return {"metadata": {"labels": {key: value}}}
    return _applied(obj, metadata={"labels": {**obj.labels, key: value}})


def status_patch(claim: Obj, patch_type: str, status: dict):
    """The body that sets a ResourceClaim's ``status`` with ``patch_type`` (for the status subresource)."""
    if patch_type == "json":
        return [{"op": "add", "path": "/status", "value": status}]
    if patch_type in ("merge", "strategic"):
        return {"status": status}
    return _applied(claim, status=status)
