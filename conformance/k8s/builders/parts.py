"""Pieces of resource.k8s.io/v1 specs as plain dicts: requests, subrequests, constraints, opaque configs,
tolerations, devices, containers. Field names and limits: resource.k8s.io/v1 (dra-protocols.md §5).

A ``request`` without ``device_class`` gets the test's DeviceClass when the :class:`Builder` renders it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

# A valid CEL selector no device matches (upstream CRUD test's DeviceClass "matching nothing"; scheduler tests).
NEVER_MATCHES = "device.driver != device.driver"


@dataclasses.dataclass(frozen=True)
class Version:
    """A semver attribute value (``DeviceAttribute.version``), e.g. ``Version("1.2.3")``."""

    value: str


def attribute(value: Any) -> dict:
    """``DeviceAttribute`` for a Python value: bool -> bool, int -> int, str -> string, Version -> version,
    lists -> ints/bools/strings/versions (gate DRAListTypeAttributes). Raises TypeError otherwise."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, Version):
        return {"version": value.value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, (list, tuple)) and value:
        key = list(attribute(value[0]))[0] + "s"
        return {key: [list(attribute(v).values())[0] for v in value]}
    raise TypeError(f"unsupported attribute value {value!r}")


def cel_selectors(selectors: Iterable[str] | str | None) -> list[dict]:
    """``[{"cel": {"expression": e}}]`` for one CEL expression or several (None -> []): DeviceSelector of
    resource.k8s.io/v1 (DeviceClass spec.selectors, DeviceRequest selectors)."""
    if selectors is None:
        return []
    if isinstance(selectors, str):
        selectors = [selectors]
    return [{"cel": {"expression": s}} for s in selectors]


def _exact(
    device_class: str | None,
    count: int | None,
    selectors: Any,
    allocation_mode: str | None,
    tolerations: Iterable[dict] | None,
    capacity: Mapping[str, str] | None,
) -> dict:
    spec: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        spec["selectors"] = cel_selectors(selectors)
    if allocation_mode and allocation_mode != "ExactCount":
        spec["allocationMode"] = allocation_mode
    else:
        spec["allocationMode"] = "ExactCount"
        spec["count"] = 1 if count is None else count
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if capacity:
        spec["capacity"] = {"requests": dict(capacity)}
    return spec


def request(
    name: str = "device",
    *,
    device_class: str | None = None,
    count: int | None = None,
    selectors: Iterable[str] | str | None = None,
    allocation_mode: str | None = None,
    admin_access: bool | None = None,
    tolerations: Iterable[dict] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> dict:
    """A ``DeviceRequest`` with ``exactly`` (ExactDeviceRequest). ``allocation_mode``: ``ExactCount``
    (default, ``count`` default 1) or ``All``; ``selectors``: CEL expressions (ANDed); ``capacity``:
    ``{name: quantity}`` (DRAConsumableCapacity)."""
    exact = _exact(device_class, count, selectors, allocation_mode, tolerations, capacity)
    if admin_access is not None:
        exact["adminAccess"] = admin_access
    return {"name": name, "exactly": exact}


def subrequest(
    name: str,
    *,
    device_class: str | None = None,
    count: int | None = None,
    selectors: Iterable[str] | str | None = None,
    allocation_mode: str | None = None,
    tolerations: Iterable[dict] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> dict:
    """A ``DeviceSubRequest`` for :func:`first_available` (KEP-4816); same fields as a request minus
    adminAccess."""
    return {"name": name, **_exact(device_class, count, selectors, allocation_mode, tolerations, capacity)}


def first_available(name: str, *subrequests: dict) -> dict:
    """A ``DeviceRequest`` with ``firstAvailable`` alternatives, tried in order (≤ 8; KEP-4816)."""
    if not subrequests:
        raise ValueError("first_available needs at least one subrequest")
    return {"name": name, "firstAvailable": list(subrequests)}


def match_attribute(attribute_name: str, requests: Iterable[str] = ()) -> dict:
    """``DeviceConstraint.matchAttribute``: all devices of ``requests`` (empty = all) share the value."""
    out: dict[str, Any] = {"matchAttribute": attribute_name}
    if requests:
        out["requests"] = list(requests)
    return out


def distinct_attribute(attribute_name: str, requests: Iterable[str] = ()) -> dict:
    """``DeviceConstraint.distinctAttribute`` (DRAConsumableCapacity): values pairwise different."""
    out: dict[str, Any] = {"distinctAttribute": attribute_name}
    if requests:
        out["requests"] = list(requests)
    return out


def opaque_config(parameters: Mapping[str, Any], *, requests: Iterable[str] = (), driver: str | None = None) -> dict:
    """A claim ``DeviceClaimConfiguration`` with opaque ``parameters`` for ``driver`` (default: the test's
    driver), scoped to ``requests`` (empty = all requests of the claim)."""
    out: dict[str, Any] = {"opaque": {"driver": driver, "parameters": dict(parameters)}}
    if requests:
        out["requests"] = list(requests)
    return out


INVALID_KIND = {"dra-conformance.test/invalid": "no config API defines this kind"}  # an object, not a name


def invalid_opaque_parameters(parameters: Mapping[str, Any]) -> dict:
    """A copy of a driver's opaque config ``parameters`` (the profile sample) whose ``kind`` is the object
    :data:`INVALID_KIND` instead of a name: no config API defines it, a typed decoder (apiVersion/kind, e.g.
    dra-example-driver's strict scheme decoder) refuses a non-string kind, and so does a flat ``map[string]string``
    decoder (upstream test-driver kubeletplugin.go extractParameters). KEP-4381: invalid config is a per-claim
    NodePrepareResources error."""
    return {**dict(parameters), "kind": dict(INVALID_KIND)}


def toleration(
    key: str,
    *,
    operator: str = "Equal",
    value: str | None = None,
    effect: str | None = None,
    toleration_seconds: int | None = None,
) -> dict:
    """A ``DeviceToleration`` (KEP-5055): operator ``Equal`` or ``Exists``; effect ``NoSchedule``,
    ``NoExecute`` or None (all)."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if value is not None and operator == "Equal":
        out["value"] = value
    if effect:
        out["effect"] = effect
    if toleration_seconds is not None:
        out["tolerationSeconds"] = toleration_seconds
    return out


def device(
    name: str,
    *,
    attributes: Mapping[str, Any] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Iterable[dict] = (),
    allow_multiple_allocations: bool | None = None,
    consumes_counters: Iterable[dict] = (),
) -> dict:
    """A ResourceSlice ``Device``. ``attributes``: ``{name: python value}`` (see :func:`attribute`);
    ``capacity``: ``{name: quantity}``; ``taints``: ``[{key, value, effect}]``."""
    out: dict[str, Any] = {"name": name}
    if attributes:
        out["attributes"] = {k: attribute(v) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: {"value": str(v)} for k, v in capacity.items()}
    if taints:
        out["taints"] = list(taints)
    if allow_multiple_allocations is not None:
        out["allowMultipleAllocations"] = allow_multiple_allocations
    if consumes_counters:
        out["consumesCounters"] = list(consumes_counters)
    return out


def container(
    name: str = "ctr",
    *,
    uses: Iterable[Any] = (),
    command: list[str] | None = None,
    image: str | None = None,
    env: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
) -> dict:
    """A pod container spec. ``uses``: claims/templates (Obj) or ``(claim_or_template, request)`` pairs the
    container references; the :class:`Builder` turns them into ``resources.claims`` entries and fills the
    image and default probe command. ``restart_policy="Always"`` on an init container makes it a sidecar
    (KEP-753 restartable init containers)."""
    out = {"name": name, "_uses": list(uses), "command": command, "image": image, "env": dict(env or {})}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out
