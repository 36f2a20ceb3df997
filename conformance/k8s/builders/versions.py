"""Render a resource.k8s.io/v1 object dict to another served version.

v1beta2 has the v1 shape (``exactly``; devices without ``basic``). v1beta1 flattens ``exactly`` into the
request and wraps device fields in ``basic`` (resource.k8s.io/v1beta1 types.go; KEP-4381 API history).
Pure: no I/O.
"""

from __future__ import annotations

import copy

from conformance.k8s.resources import RESOURCE_GROUP

SUPPORTED = ("v1", "v1beta2", "v1beta1", "v1alpha3")


def render(obj: dict, version: str) -> dict:
    """A copy of the v1 ``obj`` in ``version``; non-DRA objects are returned unchanged.

    Raises ValueError for a version this function cannot write.
    """
    if not obj.get("apiVersion", "").startswith(RESOURCE_GROUP + "/") or version == "v1":
        return obj
    if version not in SUPPORTED:
        raise ValueError(f"cannot render {obj.get('kind')} as {RESOURCE_GROUP}/{version}; use one of {SUPPORTED}")
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{RESOURCE_GROUP}/{version}"
    if version != "v1beta1":
        return out
    kind = out.get("kind")
    if kind == "ResourceClaim":
        _flatten_requests(out.get("spec", {}))
    elif kind == "ResourceClaimTemplate":
        _flatten_requests(out.get("spec", {}).get("spec", {}))
    elif kind == "ResourceSlice":
        out["spec"]["devices"] = [_basic(d) for d in out.get("spec", {}).get("devices", [])]
    return out


def _flatten_requests(claim_spec: dict) -> None:
    for req in claim_spec.get("devices", {}).get("requests", []):
        exact = req.pop("exactly", None)
        if exact:
            req.update(exact)


def _basic(device: dict) -> dict:
    name = device.pop("name")
    return {"name": name, "basic": device}
