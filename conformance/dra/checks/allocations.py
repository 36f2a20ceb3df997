"""What the API and the KEPs require of the allocations a test produced, recomputed from the driver's own
ResourceSlices (never trusting the allocation): pure functions over API objects, no cluster access.

Input: one *snapshot* — ResourceClaims read at the same moment (so that "allocated at once" means something),
the driver's ResourceSlices, the driver's name and, optionally, the DeviceClasses the claims name. Only claims
with at least one result of ``driver`` are judged (a test that writes an empty or fictional allocation into a
claim's status is an API test, not an allocation). Rules (``allocation.<name>``):

* ``unique-device``: no device (driver/pool/device) is held by two results at once, except admin-access
  results (they do not count as a use) or a device published with ``allowMultipleAllocations``
  (KEP-4381 allocator; KEP-5018 admin access; KEP-5075 consumable capacity, 1.34+);
* ``device-published``: every result of ``driver`` names a device of a current, complete pool
  (ResourceSlice ``spec.pool`` generation / ``resourceSliceCount``);
* ``device-class``: a result's driver is the one its request's DeviceClass selects (``device.driver == "X"``);
* ``result-request``: every result names a request of the claim, a firstAvailable request only through one of
  its subrequests (``parent/sub``), and one subrequest per request (KEP-4816 prioritized list);
* ``count``: ExactCount gives ``count`` results (default 1); All gives every matching device of the node (judged
  only when the class selects just ``device.driver`` and the request adds no selector);
* ``match-attribute`` / ``distinct-attribute``: ``spec.devices.constraints`` recomputed from the slices;
* ``shared-counters``: per pool and counter set, the ``consumesCounters`` of the allocated devices stay within
  the slices' ``sharedCounters`` (KEP-4815 partitionable devices);
* ``config-requests`` / ``config-source``: ``status.allocation.devices.config`` names only requests of the claim
  (a class config only the chosen subrequest), FromClaim entries are the claim's own ``spec.devices.config``,
  FromClass entries a config of the request's DeviceClass (resource.k8s.io/v1 DeviceAllocationConfiguration).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from conformance.core.objects import Obj
from conformance.dra.checks.base import Violation
from conformance.dra.checks.claims import (
    allocated_node,
    claim_ref,
    class_driver,
    parent_of,
    requests_of,
    resolve,
    results_of,
    subrequests_of,
)
from conformance.dra.inventory import Inventory, complete_pools, device_body, slice_devices

SRC_RESULT = "resource.k8s.io/v1 DeviceRequestAllocationResult"
SRC_ALLOCATOR = "k/k staging dynamic-resource-allocation structured allocator (KEP-4381)"
SRC_PRIORITIZED = "KEP-4816 prioritized list: DeviceRequest.firstAvailable, result request <parent>/<sub>"
SRC_CONSTRAINT = "resource.k8s.io/v1 DeviceConstraint.matchAttribute / distinctAttribute"
SRC_COUNTERS = "KEP-4815 ResourceSlice.spec.sharedCounters / Device.consumesCounters"
SRC_CONFIG = "resource.k8s.io/v1 DeviceAllocationConfiguration (source FromClass | FromClaim, requests)"


def _mine(claims: Iterable[Obj], driver: str, classes: Mapping[str, Obj]) -> list[Obj]:
    """Claims with results, one of them of ``driver`` or for a request whose DeviceClass selects ``driver``."""
    out = []
    for claim in claims:
        requests = requests_of(claim)
        for r in results_of(claim):
            spec = resolve(requests, r.get("request") or "") or {}
            if r.get("driver") == driver or class_driver(classes.get(spec.get("deviceClassName"))) == driver:
                out.append(claim)
                break
    return out


def _key(result: dict) -> tuple[str, str]:
    return result.get("pool"), result.get("device")


def _quantity(counter: dict) -> float:
    """The ``value`` of a counter (``{"value": "4Gi"}``) as a number."""
    from kubernetes.utils.quantity import parse_quantity  # noqa: PLC0415 - only for counters

    return float(parse_quantity(str((counter or {}).get("value", 0))))


class Published:
    """The driver's devices of its current, complete pools: ``inventory`` (attributes by qualified name),
    ``bodies``/``slices_of`` ``{(pool, device): device fields / slice}``, ``counters`` ``{(pool, counter set):
    {counter: value}}`` (floats), ``by_node`` ``{node ("*": allNodes): [(pool, device)]}``, ``selects_nodes``."""

    def __init__(self, driver: str, slices: list[Obj]) -> None:
        mine = [s for s in slices if s.get("spec.driver") == driver]
        self.inventory = Inventory.from_slices(driver, mine)
        self._devices = {d.key: d for d in self.inventory.devices}
        self.bodies: dict[tuple[str, str], dict] = {}
        self.slices_of: dict[tuple[str, str], Obj] = {}
        self.counters: dict[tuple[str, str], dict[str, float]] = {}
        self.by_node: dict[str, list[tuple[str, str]]] = {}
        self.selects_nodes = False
        for pool, current in complete_pools(mine).items():
            for s, d in slice_devices(current):
                key = self._index(s, (pool, d.get("name")))
                self.bodies[key], self.slices_of[key] = device_body(d), s
            for s in current:
                for counter_set in s.get("spec.sharedCounters") or []:
                    values = {k: _quantity(v) for k, v in (counter_set.get("counters") or {}).items()}
                    self.counters[(pool, counter_set.get("name"))] = values

    def _index(self, s: Obj, key: tuple[str, str]) -> tuple[str, str]:
        self.by_node.setdefault("*" if s.get("spec.allNodes") else s.get("spec.nodeName"), []).append(key)
        self.selects_nodes |= bool(s.get("spec.nodeSelector") or s.get("spec.perDeviceNodeSelection"))
        return key

    def attribute(self, key: tuple[str, str], qualified: str):
        """The value of attribute ``qualified`` of device ``key`` (None when absent or unpublished)."""
        device = self._devices.get(key)
        return None if device is None else device.attributes.get(qualified)


def check_allocations(
    claims: list[Obj], slices: list[Obj], driver: str, device_classes: Mapping[str, Obj] | None = None
) -> list[Violation]:
    """Violations of every ``allocation.*`` rule by ``claims`` (ResourceClaims read at one moment, any
    namespaces) against ``slices`` (the driver's ResourceSlices, all pools and generations, as listed) and
    ``device_classes`` (``{name: DeviceClass}``; rules needing a class are skipped for classes not given)."""
    classes = dict(device_classes or {})
    published = Published(driver, slices)
    mine = _mine(claims, driver, classes)
    out = unique_devices(mine, published) + shared_counters(mine, published, driver)
    for claim in mine:
        out += result_requests(claim)
        out += devices_published(claim, published, driver, classes)
        out += counts(claim, published, driver, classes)
        out += constraints(claim, published, driver)
        out += config_scope(claim, classes)
    return out


def unique_devices(claims: list[Obj], published: Published) -> list[Violation]:
    """``allocation.unique-device``: a device held by more than one non-admin-access result (in one claim or
    across claims) unless it is published with ``allowMultipleAllocations``."""
    holders: dict[tuple[str, str, str], list[str]] = {}
    for claim in claims:
        for r in results_of(claim):
            if not r.get("adminAccess"):
                holders.setdefault((r.get("driver"), *_key(r)), []).append(f"{claim_ref(claim)}:{r.get('request')}")
    out = []
    for (drv, pool, device), who in sorted(holders.items()):
        if len(who) > 1 and not published.bodies.get((pool, device), {}).get("allowMultipleAllocations"):
            out.append(
                Violation(
                    "allocation.unique-device",
                    who[0].split(":")[0],
                    f"device {drv}/{pool}/{device} is allocated {len(who)} times at once: {who}",
                    SRC_ALLOCATOR + "; KEP-5018 (only adminAccess may share a device in use)",
                )
            )
    return out


def devices_published(claim: Obj, published: Published, driver: str, classes: Mapping[str, Obj]) -> list[Violation]:
    """``allocation.device-published`` (results of ``driver`` name a device of a current, complete pool) and
    ``allocation.device-class`` (a result's driver is the one its request's DeviceClass selects)."""
    out = []
    requests = requests_of(claim)
    for r in results_of(claim):
        where = f"{r.get('driver')}/{r.get('pool')}/{r.get('device')} (request {r.get('request')})"
        if r.get("driver") == driver and _key(r) not in published.bodies:
            out.append(
                Violation(
                    "allocation.device-published",
                    claim_ref(claim),
                    f"{where} is in no current, complete pool of {driver}'s ResourceSlices",
                    SRC_RESULT + "; resource.k8s.io/v1 ResourcePool generation / resourceSliceCount",
                )
            )
        spec = resolve(requests, r.get("request") or "")
        class_name = (spec or {}).get("deviceClassName")
        selected = class_driver(classes.get(class_name))
        if selected and r.get("driver") != selected:
            out.append(
                Violation(
                    "allocation.device-class",
                    claim_ref(claim),
                    f"{where}: DeviceClass {class_name} selects driver {selected}",
                    "resource.k8s.io/v1 DeviceClass.spec.selectors; " + SRC_RESULT,
                )
            )
    return out


def result_requests(claim: Obj) -> list[Violation]:
    """``allocation.result-request``: results name requests of the claim; a firstAvailable request only
    through one subrequest (``parent/sub``), the same for all its results."""
    out = []
    requests = requests_of(claim)
    chosen: dict[str, set[str]] = {}
    for r in results_of(claim):
        name = r.get("request") or ""
        if resolve(requests, name) is None:
            known = sorted(requests) + [f"{p}/{s}" for p, q in requests.items() for s in subrequests_of(q)]
            out.append(
                Violation(
                    "allocation.result-request",
                    claim_ref(claim),
                    f"result for device {r.get('pool')}/{r.get('device')} names request {name!r}; "
                    f"the claim has {known}",
                    SRC_RESULT + ".request; " + SRC_PRIORITIZED,
                )
            )
        elif "/" in name:
            chosen.setdefault(parent_of(name), set()).add(name)
    for parent, names in sorted(chosen.items()):
        if len(names) > 1:
            out.append(
                Violation(
                    "allocation.result-request",
                    claim_ref(claim),
                    f"request {parent} got devices of several subrequests {sorted(names)} (one must be chosen)",
                    SRC_PRIORITIZED,
                )
            )
    return out


def _all_devices(claim: Obj, spec: dict, published: Published, driver: str, classes) -> set | None:
    """Every device an All-mode ``spec`` matches on the claim's node, or None when that cannot be recomputed
    without evaluating CEL (request selectors, a class selecting more than the driver, taints, sharing)."""
    device_class = classes.get(spec.get("deviceClassName"))
    node = allocated_node(claim)
    if spec.get("selectors") or spec.get("tolerations") or spec.get("adminAccess") or device_class is None or not node:
        return None
    driver_only = len(device_class.get("spec.selectors") or []) == 1 and class_driver(device_class) == driver
    if published.selects_nodes or not driver_only:
        return None
    keys = published.by_node.get(node, []) + published.by_node.get("*", [])  # an index, not a scan per claim
    flags = ("taints", "allowMultipleAllocations", "consumesCounters")
    return None if any(published.bodies[k].get(f) for k in keys for f in flags) else set(keys)


def counts(claim: Obj, published: Published, driver: str, classes: Mapping[str, Obj]) -> list[Violation]:
    """``allocation.count``: per top-level request, ExactCount gives ``count`` devices (default 1) and All
    every device it matches on the node (where recomputable); for firstAvailable, of the chosen subrequest."""
    out = []
    requests = requests_of(claim)
    for name in requests:
        mine = [r for r in results_of(claim) if parent_of(r.get("request") or "") == name]
        names = {r.get("request") for r in mine}
        spec = resolve(requests, next(iter(names))) if len(names) == 1 else None
        if spec is None:
            if not mine:
                out.append(Violation("allocation.count", claim_ref(claim), f"request {name} got no device", SRC_RESULT))
            continue  # several or unknown subrequests: result-request reports it
        mode = spec.get("allocationMode") or "ExactCount"
        got = sorted(f"{r.get('pool')}/{r.get('device')}" for r in mine)
        if mode == "ExactCount" and len(mine) != int(spec.get("count") or 1):
            want = int(spec.get("count") or 1)
            out.append(
                Violation(
                    "allocation.count",
                    claim_ref(claim),
                    f"request {next(iter(names))} (ExactCount {want}) got {len(mine)} device(s): {got}",
                    "resource.k8s.io/v1 ExactDeviceRequest.count; " + SRC_RESULT,
                )
            )
        elif mode == "All":
            expected = _all_devices(claim, spec, published, driver, classes)
            keys = {_key(r) for r in mine if r.get("driver") == driver}
            if expected is not None and keys != expected:
                out.append(
                    Violation(
                        "allocation.count",
                        claim_ref(claim),
                        f"request {next(iter(names))} (All) got {got}; the node {allocated_node(claim)} publishes "
                        f"{sorted(f'{p}/{d}' for p, d in expected)}",
                        "resource.k8s.io/v1 ExactDeviceRequest.allocationMode All",
                    )
                )
    return out


def _covered(results: list[dict], requests: list[str]) -> list[dict]:
    """Results a constraint over ``requests`` (empty: all) applies to; ``parent`` covers ``parent/sub``."""
    if not requests:
        return results
    wanted = set(requests)
    return [r for r in results if r.get("request") in wanted or parent_of(r.get("request") or "") in wanted]


def constraints(claim: Obj, published: Published, driver: str) -> list[Violation]:
    """``allocation.match-attribute`` (all covered devices have the attribute, with one value) and
    ``allocation.distinct-attribute`` (all have it, with pairwise different values), from the slices."""
    out = []
    for constraint in claim.get("spec.devices.constraints") or []:
        covered = [
            r for r in _covered(results_of(claim), constraint.get("requests") or []) if r.get("driver") == driver
        ]
        for field, rule in (("matchAttribute", "match-attribute"), ("distinctAttribute", "distinct-attribute")):
            attribute = constraint.get(field)
            if not attribute or not covered:
                continue
            values = {f"{r.get('pool')}/{r.get('device')}": published.attribute(_key(r), attribute) for r in covered}
            seen = [v for v in values.values() if v is not None]
            bad = len(seen) != len(values) or (
                len(set(seen)) > 1 if field == "matchAttribute" else len(set(seen)) != len(seen)
            )
            if bad:
                out.append(
                    Violation(
                        f"allocation.{rule}",
                        claim_ref(claim),
                        f"{field} {attribute} over requests {constraint.get('requests') or 'all'}: "
                        f"published values {values}",
                        SRC_CONSTRAINT,
                    )
                )
    return out


def shared_counters(claims: list[Obj], published: Published, driver: str) -> list[Violation]:
    """``allocation.shared-counters``: the counters the allocated devices (each once; admin access consumes
    none) consume from each pool's counter set stay within what the slices share."""
    used: dict[tuple[str, str], dict[str, float]] = {}
    holders: dict[tuple[str, str], list[str]] = {}
    seen = set()
    for claim in claims:
        for r in results_of(claim):
            if r.get("driver") != driver or r.get("adminAccess") or _key(r) in seen:
                continue
            seen.add(_key(r))
            for consumed in published.bodies.get(_key(r), {}).get("consumesCounters") or []:
                key = (r.get("pool"), consumed.get("counterSet"))
                holders.setdefault(key, []).append(f"{r.get('device')} ({claim_ref(claim)})")
                for counter, value in (consumed.get("counters") or {}).items():
                    used.setdefault(key, {})[counter] = used.get(key, {}).get(counter, 0.0) + _quantity(value)
    out = []
    for (pool, counter_set), counters in sorted(used.items()):
        shared = published.counters.get((pool, counter_set), {})
        over = {c: (v, shared.get(c)) for c, v in counters.items() if c not in shared or v > shared[c]}
        if over:
            out.append(
                Violation(
                    "allocation.shared-counters",
                    f"ResourceSlice pool {pool}",
                    f"counter set {counter_set}: consumed vs shared {over} by {holders[(pool, counter_set)]}",
                    SRC_COUNTERS,
                )
            )
    return out


def _canonical(entry: dict) -> tuple[tuple[str, ...], str]:
    return tuple(entry.get("requests") or []), json.dumps(entry.get("opaque") or {}, sort_keys=True)


def _class_configs(device_class: Obj) -> list[str]:
    return [json.dumps(c.get("opaque") or {}, sort_keys=True) for c in device_class.get("spec.config") or []]


def _names_every_request(names: tuple[str, ...], requests: Mapping[str, dict], chosen: set) -> bool:
    """Whether a config's ``requests`` name each top-level request, by its name or its chosen subrequest's."""
    return all(r in names or any(c in names and parent_of(c) == r for c in chosen) for r in requests)


def config_scope(claim: Obj, classes: Mapping[str, Obj]) -> list[Violation]:
    """``allocation.config-requests`` and ``allocation.config-source`` over ``status.allocation.devices.config``."""
    out = []
    requests = requests_of(claim)
    chosen = {r.get("request") for r in results_of(claim)}
    claim_configs = [_canonical(c) for c in claim.get("spec.devices.config") or []]
    entries = claim.get("status.allocation.devices.config") or []
    # 1.37's allocator clears ``requests`` of a claim config naming every request: "empty means all" (v0.37)
    cleared = {c for c in claim_configs if c[0] and _names_every_request(c[0], requests, chosen)}

    def bad(rule: str, message: str) -> None:
        out.append(Violation(f"allocation.{rule}", claim_ref(claim), message, SRC_CONFIG))

    for entry in entries:
        source, names = entry.get("source"), entry.get("requests") or []
        for name in names:
            if name not in requests and resolve(requests, name) is None:
                bad("config-requests", f"{source} config names request {name!r}, not a request of the claim")
            elif source == "FromClass" and "/" in name and name not in chosen:
                bad("config-requests", f"FromClass config names subrequest {name} that was not chosen ({chosen})")
        if (
            source == "FromClaim"
            and _canonical(entry) not in claim_configs
            and not (not names and any(c[1] == _canonical(entry)[1] for c in cleared))
        ):
            bad("config-source", f"FromClaim config {entry} is not in the claim's spec.devices.config")
        elif source == "FromClass":
            for name in names:
                sub = next((c for c in sorted(chosen) if parent_of(c) == name), "")
                device_class = classes.get(
                    (resolve(requests, name) or resolve(requests, sub) or {}).get("deviceClassName")
                )
                if device_class is not None and _canonical(entry)[1] not in _class_configs(device_class):
                    bad("config-source", f"FromClass config {entry} is not a config of DeviceClass {device_class.name}")
        elif source not in ("FromClaim", "FromClass"):
            bad("config-source", f"config {entry} has source {source!r} (FromClass or FromClaim)")
    present = {_canonical(e) for e in entries if e.get("source") == "FromClaim"}
    for config in claim.get("spec.devices.config") or []:
        canonical = _canonical(config)
        if canonical in cleared and ((), canonical[1]) in present:
            continue  # written with requests cleared: it applies to every request (empty means all)
        if all("/" not in n for n in canonical[0]) and canonical not in present:
            bad("config-source", f"claim config {config} is missing from status.allocation.devices.config (FromClaim)")
    return out
