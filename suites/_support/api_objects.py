"""The resource.k8s.io kinds the v1 API suite exercises, each with a builder call for a minimal valid object
that touches no real device, and the request bodies of the four patch types for a label change.

Sources: upstream test/e2e/dra/dra.go "CRUD Tests" (conformance, v1.35/v1.37): DeviceClass with a selector
matching nothing, ResourceSlice for a fictional driver, DeviceTaintRule for a driver no device has; Kubernetes
API conventions for json/merge/strategic/apply patches.
Belongs in: conformance/k8s/builders (a ``minimal(kind)`` helper) and conformance/k8s/client.py (patches).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from conformance.api import Obj, device

DEVICE_NAME = "dev-0"
TAINT_KEY = "dra-conformance.test/api-crud"
NEVER = "device.driver != device.driver"


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind: ``name``, ``plural``, ``namespaced``, ``build(builder) -> Obj``, ``capability`` it needs."""

    name: str
    plural: str
    namespaced: bool
    build: Callable
    capability: str = ""

    def __str__(self) -> str:
        return self.name


KINDS = (
    Kind("DeviceClass", "deviceclasses", False, lambda b: b.device_class(selectors=NEVER)),
    Kind("ResourceClaim", "resourceclaims", True, lambda b: b.claim()),
    Kind("ResourceClaimTemplate", "resourceclaimtemplates", True, lambda b: b.claim_template()),
    Kind("ResourceSlice", "resourceslices", False, lambda b: b.resource_slice([], all_nodes=True)),
    Kind("DeviceTaintRule", "devicetaintrules", False,
         lambda b: b.device_taint_rule(key=TAINT_KEY, driver=b.test_driver_name()), "api.devicetaintrules"),
)
CORE_KINDS = KINDS[:4]
PATCH_TYPES = ("json", "merge", "strategic", "apply")


def label_patch(obj: Obj, patch_type: str, key: str, value: str):
    """The body that sets label ``key`` = ``value`` on ``obj`` with ``patch_type``."""
    if patch_type == "json":
        return [{"op": "add", "path": "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1"), "value": value}]
    if patch_type in ("merge", "strategic"):
        return {"metadata": {"labels": {key: value}}}
    meta = {"name": obj.name, "labels": {**obj.labels, key: value}}
    if obj.namespace:
        meta["namespace"] = obj.namespace
    return Obj({"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta})


def status_patch(claim: Obj, patch_type: str, status: dict):
    """The body that sets a ResourceClaim's ``status`` with ``patch_type`` (for the status subresource)."""
    if patch_type == "json":
        return [{"op": "add", "path": "/status", "value": status}]
    if patch_type in ("merge", "strategic"):
        return {"status": status}
    return Obj({"apiVersion": claim.api_version, "kind": claim.kind,
                "metadata": {"name": claim.name, "namespace": claim.namespace}, "status": status})


EMPTY_ALLOCATION = {"allocation": {}}  # valid status: upstream CRUD conformance test writes it


def with_label(obj: Obj, key: str, value: str) -> Obj:
    """A copy of ``obj`` (with its resourceVersion) carrying one more label, for an update."""
    raw = obj.to_dict()
    raw["metadata"].setdefault("labels", {})[key] = value
    return Obj(raw)


def slice_with_device(slice_obj: Obj) -> Obj:
    """A copy of a test-made ResourceSlice with one device added (the conformance test's update)."""
    raw = slice_obj.to_dict()
    raw["spec"]["devices"] = list(raw["spec"].get("devices") or []) + [device(DEVICE_NAME)]
    return Obj(raw)


def class_with_selectors(device_class: Obj, *expressions: str) -> Obj:
    """A copy of a DeviceClass whose selectors are ``expressions`` (DeviceClass spec is mutable)."""
    raw = device_class.to_dict()
    raw["spec"]["selectors"] = [{"cel": {"expression": e}} for e in expressions]
    return Obj(raw)


def with_spec_change(obj: Obj, path: str, value) -> Obj:
    """A copy of ``obj`` with the dotted ``path`` under the object set to ``value`` (for immutability checks)."""
    raw = obj.to_dict()
    cur = raw
    parts = path.split(".")
    for part in parts[:-1]:
        cur = cur[int(part)] if part.isdigit() else cur[part]
    last = parts[-1]
    if last.isdigit():
        cur[int(last)] = value
    else:
        cur[last] = value
    return Obj(raw)


__all__ = ["CORE_KINDS", "EMPTY_ALLOCATION", "KINDS", "PATCH_TYPES", "Kind", "class_with_selectors",
           "label_patch", "slice_with_device", "status_patch", "with_label", "with_spec_change"]
