"""Which parts of a ResourceClaim belong to this driver on this node, and which opaque configuration
applies to each allocated device. Pure: works on the claim as decoded JSON (``resource.k8s.io/v1``).

Rules (resource.k8s.io/v1 DeviceAllocationConfiguration, KEP-4381; upstream "must map configs and devices
to the right containers", "uses the config for the selected subrequest"):
- only ``status.allocation.devices.results[]`` with ``driver == <self>``;
- only ``config[]`` entries whose ``opaque.driver == <self>``; others are ignored;
- a config without ``requests`` applies to every result; otherwise to results whose request is listed,
  where a parent request name ``req`` also covers its subrequests ``req/sub``;
- class configs (``FromClass``) apply first, claim configs (``FromClaim``) override them.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import opaque

SOURCES = ("FromClass", "FromClaim")


class ClaimError(ValueError):
    """This claim cannot be prepared here; the message is returned to the kubelet for that claim."""


@dataclass(frozen=True)
class ClaimRef:
    """What the kubelet sends for one claim (namespace, name, uid)."""

    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"ResourceClaim {self.namespace}/{self.name} (UID {self.uid})"


@dataclass(frozen=True)
class AllocatedDevice:
    """One allocation result of this driver with the configuration that applies to it."""

    request: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None
    consumed_capacity: tuple[tuple[str, str], ...] = ()
    config: opaque.GpuConfig = opaque.GpuConfig()
    config_sources: tuple[str, ...] = ()
    timed_noexecute_toleration: bool = False  # the result tolerates NoExecute taints for tolerationSeconds only

    @property
    def base_request(self) -> str:
        """The main request name (``gpu`` for ``gpu/large``): what containers reference and the kubelet matches."""
        return self.request.split("/", 1)[0]


def applies(config_requests: list[str] | None, request: str) -> bool:
    """True when a config with ``requests`` applies to the result for ``request`` (``req`` or ``req/sub``)."""
    if not config_requests:
        return True
    return request in config_requests or request.split("/", 1)[0] in config_requests


# faults that change how a claim is read (reference_driver/faults.py), passed as ``quirks``
QUIRKS = (
    "prepare-unallocated",
    "class-config-last",
    "foreign-config-parsed",
    "invalid-config-ignored",
    "config-requests-ignored",
    "foreign-results-prepared",
    "results-by-request-name",
)


def _configs(
    allocation: dict, driver: str, ignored: frozenset[str] = frozenset(), quirks: frozenset[str] = frozenset()
) -> list[tuple[str, list[str], opaque.GpuConfig]]:
    """This driver's configs as (label, requests, parsed), FromClass first, leaving out the sources in
    ``ignored`` (faults ``ignore-claim-config`` / ``ignore-class-config``). Raises ClaimError on invalid ones.
    ``quirks`` (faults): ``foreign-config-parsed`` parses other drivers' configs too, ``invalid-config-ignored``
    drops invalid ones, ``class-config-last`` applies FromClass after FromClaim, ``config-requests-ignored``
    applies a request-scoped config to every request."""
    out = []
    for index, entry in enumerate(allocation.get("devices", {}).get("config") or []):
        params = entry.get("opaque") or {}
        if params.get("driver") != driver and "foreign-config-parsed" not in quirks:
            continue
        source = entry.get("source", "FromClaim")
        if source not in SOURCES:
            raise ClaimError(f"allocation.devices.config[{index}]: unknown source {source!r}")
        if source in ignored:
            continue
        label = f"{source}[{index}]"
        try:
            parsed = opaque.parse(params.get("parameters"), f"config[{index}] ({source}) parameters")
        except opaque.ConfigError as err:
            if "invalid-config-ignored" in quirks:
                continue
            raise ClaimError(f"invalid opaque configuration for driver {driver}: {err}") from None
        scoped = [] if "config-requests-ignored" in quirks else list(entry.get("requests") or [])
        out.append((label, scoped, parsed))
    order = SOURCES[::-1] if "class-config-last" in quirks else SOURCES
    out.sort(key=lambda item: order.index(item[0].split("[", 1)[0]))
    return out


def timed_noexecute_toleration(result: dict) -> bool:
    """Whether an allocation result's ``tolerations`` (copied by the scheduler, KEP-5055) tolerate NoExecute
    taints (effect NoExecute or empty, i.e. every effect) only for ``tolerationSeconds``."""
    return any(
        t.get("effect") in (None, "", "NoExecute") and t.get("tolerationSeconds") is not None
        for t in result.get("tolerations") or []
    )


def allocated_devices(
    claim: dict,
    ref: ClaimRef,
    driver: str,
    pools: set[str],
    *,
    check_uid: bool = True,
    ignore_claim_config: bool = False,
    ignore_class_config: bool = False,
    quirks: frozenset[str] = frozenset(),
) -> list[AllocatedDevice]:
    """This driver's allocated devices of ``claim`` with their effective configuration.

    ``pools`` are the pools this node publishes; ``ignore_claim_config`` / ``ignore_class_config`` drop the
    configs of that source (faults of the same names); ``quirks``: faults of :data:`QUIRKS` that are on
    (``prepare-unallocated``: an unallocated claim has no devices instead of an error;
    ``foreign-results-prepared``: every result is taken as this driver's, whatever its ``driver``;
    ``results-by-request-name``: :func:`by_request_name`). Raises ClaimError (UID mismatch "got replaced", not
    allocated, no devices of this driver, device of another node's pool, invalid configuration).
    """
    meta = claim.get("metadata") or {}
    if check_uid and meta.get("uid") != ref.uid:
        raise ClaimError(f"{ref} got replaced: the API server has UID {meta.get('uid')!r}")
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation and "prepare-unallocated" in quirks:
        return []
    if not allocation:
        raise ClaimError(f"{ref} is not allocated (status.allocation is empty)")
    ignored = frozenset(
        source for source, drop in (("FromClaim", ignore_claim_config), ("FromClass", ignore_class_config)) if drop
    )
    configs = _configs(allocation, driver, ignored, quirks)
    every = "foreign-results-prepared" in quirks
    results = [r for r in allocation.get("devices", {}).get("results") or [] if every or r.get("driver") == driver]
    if not results:
        raise ClaimError(f"{ref} has no devices allocated by driver {driver}")
    devices = []
    for result in results:
        if result.get("pool") not in pools:
            raise ClaimError(
                f"{ref}: device {result.get('pool')}/{result.get('device')} is not in a pool of "
                f"this node (pools here: {sorted(pools)})"
            )
        effective, labels = opaque.GpuConfig(), []
        for label, requests, parsed in configs:
            if applies(requests, result["request"]):
                effective, labels = effective.merged(parsed), [*labels, label]
        consumed = tuple(sorted((k, str(v)) for k, v in (result.get("consumedCapacity") or {}).items()))
        devices.append(
            AllocatedDevice(
                request=result["request"],
                pool=result["pool"],
                device=result["device"],
                admin_access=bool(result.get("adminAccess")),
                share_id=result.get("shareID"),
                consumed_capacity=consumed,
                config=effective,
                config_sources=tuple(labels),
                timed_noexecute_toleration=timed_noexecute_toleration(result),
            )
        )
    return by_request_name(claim, ref, devices) if "results-by-request-name" in quirks else devices


def by_request_name(claim: dict, ref: ClaimRef, devices: list[AllocatedDevice]) -> list[AllocatedDevice]:
    """Fault ``results-by-request-name``: ``devices`` looked up by the names of the claim's requests
    (``spec.devices.requests[].name``), one result per name, as a driver written for one device per exact
    request does with a map from a result's ``request`` to the result: a later result of a request replaces the
    earlier one (count 2 or allocationMode All: one device prepared), and a firstAvailable result
    (``gpu/one``, KEP-4816) is found under no request name. Returns the devices kept, in request order; raises
    ClaimError naming the requests and the results' request names when none is left. Source: resource.k8s.io/v1
    DeviceRequestAllocationResult.request (``<request>`` or ``<request>/<subrequest>``, one result per device)."""
    by_name = {d.request: d for d in devices}  # the fault: a later result of the same request wins
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    names = [r.get("name") for r in requests]
    kept = [by_name[n] for n in names if n in by_name]
    if not kept:
        raise ClaimError(
            f"{ref}: no allocation result for request {', '.join(map(str, names)) or '(none)'} (the results name "
            f"{', '.join(sorted(by_name))}): injected fault results-by-request-name"
        )
    return kept
