"""A driver's devices as published in its ResourceSlices: the one place that flattens slices into devices
(capability discovery, run.json and suites all read them through here) and picks attributes or capacities
that let a test recompute an allocation rule from the slices instead of trusting the allocation.

Sources: resource.k8s.io/v1 ResourceSlice ``spec.devices[].attributes`` / ``capacity`` (KEP-4381); v1beta1
wraps a device's fields in ``basic``; complete pools are ``resourceSliceCount`` slices of the highest
``generation`` (resource.k8s.io/v1 ResourcePool); attribute names are qualified with the driver's domain when
unprefixed (dra-protocols.md §5.3); CEL ``device.attributes["<domain>"].<id>`` (dra-protocols.md §6).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from conformance.core.objects import Obj
from conformance.dra import counters
from conformance.dra.cel import cel_attribute, cel_literal


def current_slices(slices: list[Obj]) -> dict[str, list[Obj]]:
    """``{pool name: slices of its highest pool.generation}`` for every pool among ``slices`` (of one driver),
    complete or not (resource.k8s.io/v1 ResourcePool.generation: consumers ignore older generations)."""
    by_pool: dict[str, list[Obj]] = {}
    for s in slices:
        by_pool.setdefault(s.get("spec.pool.name"), []).append(s)
    out = {}
    for pool, items in by_pool.items():
        gen = max(int(s.get("spec.pool.generation") or 0) for s in items)
        out[pool] = [s for s in items if int(s.get("spec.pool.generation") or 0) == gen]
    return out


def complete_pools(slices: list[Obj]) -> dict[str, list[Obj]]:
    """``{pool name: slices of its highest generation}`` for pools whose slice count is complete."""
    return {
        pool: current
        for pool, current in current_slices(slices).items()
        if len(current) >= int(current[0].get("spec.pool.resourceSliceCount") or 1)
    }


def driver_slices(k8s, driver: str, version: str | None = None) -> list[Obj]:
    """The driver's current ResourceSlices (field selector ``spec.driver``), every pool and generation, read
    through API ``version`` (default: the client's)."""
    return k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}", version=version)


def pool_devices(slices: Iterable[Obj]) -> dict[str, tuple]:
    """``{device name: (sorted attributes, sorted capacity)}`` of ``slices`` (one pool's current slices):
    what "the same devices" means when a pool is re-created (names, attribute values, capacities)."""
    out = {}
    for _, d in slice_devices(slices):
        name, attrs, cap = device_fields(d)
        out[name] = (
            tuple(sorted((k, repr(v)) for k, v in attrs.items())),
            tuple(sorted((k, repr(v)) for k, v in cap.items())),
        )
    return out


def slice_state(slices: Iterable[Obj]) -> list[tuple]:
    """``[(slice name, uid, pool, generation, resourceSliceCount, device names)]`` sorted: the published
    state whose change between two reads is churn (new objects, generation bumps, devices moving)."""
    return sorted(
        (
            s.name,
            s.uid,
            s.get("spec.pool.name"),
            int(s.get("spec.pool.generation") or 0),
            int(s.get("spec.pool.resourceSliceCount") or 0),
            tuple(device_fields(d)[0] for d in s.get("spec.devices") or []),
        )
        for s in slices
    )


def remove_driver_slice(k8s, driver: str, slice_: Obj) -> None:
    """Delete one ResourceSlice of ``driver`` as the kubelet does at start-up (upstream "ResourceSlice must be
    removed on kubelet startup"), past the write guard that protects objects the run does not own. Raises
    ValueError for a slice of another driver (the one exception to the guard is the driver under test)."""
    if slice_.get("spec.driver") != driver:
        raise ValueError(
            f"refusing to delete ResourceSlice {slice_.name}: "
            f"it belongs to {slice_.get('spec.driver')!r}, not {driver!r}"
        )
    k8s.unguarded().delete("ResourceSlice", slice_.name)


def device_body(device: dict) -> dict:
    """The fields of one slice device in any served version (v1beta1's ``basic`` unwrapped)."""
    return device.get("basic") or device


def device_fields(device: dict) -> tuple[str, dict, dict]:
    """``(name, attributes, capacity)`` of a slice device in any version, as the API wrote them."""
    body = device_body(device)
    return device.get("name"), body.get("attributes") or {}, body.get("capacity") or {}


def slice_devices(slices: Iterable[Obj]) -> Iterator[tuple[Obj, dict]]:
    """``(slice, device dict)`` for every device of ``slices``, in order."""
    for s in slices:
        for d in s.get("spec.devices") or []:
            yield s, d


def typed_attributes(attributes: dict) -> dict[str, tuple[str, object]]:
    """``{name: (type, value)}`` of typed attribute values as published (``{"int": 3}`` -> ``("int", 3)``);
    the type is the DeviceAttribute field set: ``int`` | ``bool`` | ``string`` | ``version``."""
    return {k: next(iter(v.items())) for k, v in attributes.items() if isinstance(v, dict) and v}


@dataclasses.dataclass(frozen=True)
class Device:
    """One published device: ``node`` ("" for non-node-local), ``pool``, ``name``, ``attributes`` and
    ``capacity`` keyed by fully-qualified name (attribute values unwrapped: int, bool, str, version str),
    ``types`` (qualified attribute name -> ``int`` | ``bool`` | ``string`` | ``version``), ``consumes``
    (``((counter set, counter, quantity string), ...)`` from ``consumesCounters``: KEP-4815), ``taints``
    (the published DeviceTaint dicts: KEP-5055), ``binding_conditions`` (condition types of
    ``bindingConditions``: KEP-5007), ``multiple`` (``allowMultipleAllocations``: KEP-5075, one claim's results
    may name it twice, as two shares)."""

    node: str
    pool: str
    name: str
    attributes: dict
    capacity: dict
    types: dict = dataclasses.field(default_factory=dict)
    consumes: tuple = ()
    taints: tuple = ()
    binding_conditions: tuple = ()
    multiple: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """``(pool, name)``: what an allocation result names."""
        return self.pool, self.name


def qualify(driver: str, name: str) -> str:
    """The fully-qualified attribute or capacity name: unprefixed names get the driver's domain
    (``model`` -> ``<driver>/model``; resource.k8s.io/v1 QualifiedName)."""
    return name if "/" in name else f"{driver}/{name}"


def facts(slices: Iterable[Obj]) -> list[dict]:
    """``[{node, pool, device, attributes, attribute_types, capacity, shared_counters, consumes_counters,
    allow_multiple_allocations, taints, binding_conditions}]`` of every device in ``slices`` (attribute names
    as published, values unwrapped, ``attribute_types`` their ``int|bool|string|version``): the device facts
    of capability discovery and run.json."""
    out = []
    for s, d in slice_devices(slices):
        name, attrs, cap = device_fields(d)
        body = device_body(d)
        out.append(
            {
                "node": s.get("spec.nodeName") or "",
                "pool": s.get("spec.pool.name"),
                "device": name,
                "attributes": {k: next(iter(v.values())) if isinstance(v, dict) and v else v for k, v in attrs.items()},
                "attribute_types": {k: kind for k, (kind, _) in typed_attributes(attrs).items()},
                "capacity": {k: (v or {}).get("value") for k, v in cap.items()},
                "shared_counters": bool(s.get("spec.sharedCounters")),
                "consumes_counters": bool(body.get("consumesCounters")),
                "allow_multiple_allocations": bool(body.get("allowMultipleAllocations")),
                "taints": list(body.get("taints") or []),
                "binding_conditions": list(body.get("bindingConditions") or []),
            }
        )
    return out


@dataclasses.dataclass(frozen=True)
class Together:
    """Devices that can be allocated together on each node: the CEL ``selector`` (None: every device)
    matches exactly ``by_node[node]`` among that node's devices."""

    selector: str | None
    by_node: dict

    def names_on(self, node: str) -> list[str]:
        """Names of the devices the selector picks on ``node``, in published order."""
        return [d.name for d in self.by_node.get(node, [])]

    def smallest(self) -> int:
        """The fewest devices the selector picks on any node (0 when no node)."""
        return min((len(v) for v in self.by_node.values()), default=0)


class Unpublished(KeyError, AssertionError):
    """An allocation names a device that is not among the driver's published devices (complete pools)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Inventory:
    """All devices of one driver from its complete pools (highest generation)."""

    def __init__(self, driver: str, devices: Iterable[Device], counter_sets: dict | None = None) -> None:
        self.driver = driver
        self.devices = list(devices)
        self.counter_sets = dict(counter_sets or {})  # {(pool, counter set): {counter: quantity string}}
        self._by_key = {d.key: d for d in self.devices}
        self._by_node: dict[str, list[Device]] = {}  # built once: on_node is a lookup, not a scan per node
        for d in self.devices:
            self._by_node.setdefault(d.node, []).append(d)

    @classmethod
    def from_slices(cls, driver: str, slices: list[Obj]) -> Inventory:
        """The devices of ``driver``'s complete pools among ``slices``."""
        devices, counter_sets = [], {}
        for pool, pool_slices in complete_pools(slices).items():
            counter_sets.update(counters.shared(pool, pool_slices))
            for s, d in slice_devices(pool_slices):
                name, attrs, cap = device_fields(d)
                typed = {qualify(driver, k): tv for k, tv in typed_attributes(attrs).items()}
                devices.append(
                    Device(
                        s.get("spec.nodeName") or "",
                        s.get("spec.pool.name"),
                        name,
                        {k: v for k, (_, v) in typed.items()},
                        {qualify(driver, k): (v or {}).get("value") for k, v in cap.items()},
                        {k: t for k, (t, _) in typed.items()},
                        counters.consumed(device_body(d)),
                        tuple(device_body(d).get("taints") or ()),
                        tuple(device_body(d).get("bindingConditions") or ()),
                        bool(device_body(d).get("allowMultipleAllocations")),
                    )
                )
        return cls(driver, devices, counter_sets)

    @classmethod
    def read(cls, k8s, driver: str) -> Inventory:
        """The driver's devices right now (slices listed with ``spec.driver=<driver>``)."""
        return cls.from_slices(driver, driver_slices(k8s, driver))

    def of(self, result) -> Device:
        """The device an allocation result (``driver``/``pool``/``device``) names. Raises :class:`Unpublished`
        (a KeyError and an AssertionError: a failed check, not a harness crash) naming the device and the pools
        the inventory holds when the driver's complete pools did not publish it."""
        try:
            return self._by_key[(result.pool, result.device)]
        except KeyError:
            pools = sorted({d.pool for d in self.devices})
            raise Unpublished(
                f"allocation result names device {result.device} of pool {result.pool}, which the driver's "
                f"complete pools did not publish (pools read: {pools}; resource.k8s.io/v1 ResourcePool)"
            ) from None

    def on_node(self, node: str) -> list[Device]:
        """Devices published for ``node``, in published order (a new list: O(its devices), not O(all))."""
        return list(self._by_node.get(node, ()))

    def names_on(self, node: str) -> list[str]:
        """Names of the devices published for ``node``, in published order."""
        return [d.name for d in self.on_node(node)]

    def nodes(self) -> list[str]:
        """Nodes with at least one device, sorted."""
        return sorted({d.node for d in self.devices if d.node})

    def per_node_min(self) -> int:
        """The smallest number of devices any driver node has (0 when none)."""
        return min((len(self.on_node(n)) for n in self.nodes()), default=0)

    def per_node_max(self) -> int:
        """The largest number of devices any driver node has (0 when none)."""
        return max((len(self.on_node(n)) for n in self.nodes()), default=0)

    def _common(self, devices: list[Device], field: str) -> set[str]:
        return set.intersection(*[set(getattr(d, field)) for d in devices]) if devices else set()

    def grouping_attribute(self) -> str:
        """A string/int attribute that, on some node, several devices share while others differ (so both
        matchAttribute and distinctAttribute can be satisfied and violated); raises LookupError when none."""
        for node in self.nodes():
            devices = self.on_node(node)
            for name in sorted(self._common(devices, "attributes")):
                if any(d.types.get(name) not in ("string", "int") for d in devices):
                    continue
                values = [d.attributes[name] for d in devices]
                if 1 < len(set(values)) < len(values):
                    return name
        raise LookupError(f"no attribute of {self.driver} groups devices (shared by some, not all, on one node)")

    def distinct_attribute(self) -> str:
        """An attribute whose values differ between the devices of every node (for distinctAttribute, e.g. a
        UUID or index); raises LookupError when none."""
        for name in sorted(self._common(self.devices, "attributes")):
            if any(d.types.get(name) not in ("string", "int") for d in self.devices):
                continue
            if all(len({d.attributes[name] for d in self.on_node(n)}) == len(self.on_node(n)) for n in self.nodes()):
                return name
        raise LookupError(f"no attribute has distinct values per node for {self.driver}")

    def splitting_capacity(self) -> tuple[str, str, str, list[str]]:
        """``(node, capacity name, value, names of the node's devices publishing at least value)``: a
        capacity every device of ``node`` publishes with differing values, and its largest value there, so
        a selector ``>= value`` matches some devices of the node and not others. Raises LookupError naming
        the capacities seen per node when no capacity splits any node's devices."""
        from kubernetes.utils.quantity import parse_quantity  # noqa: PLC0415 - only for quantities

        seen = {}
        for node in self.nodes():
            devices = self.on_node(node)
            for name in sorted(self._common(devices, "capacity")):
                amounts = {d.name: parse_quantity(d.capacity[name]) for d in devices}
                seen[f"{node}/{name}"] = sorted({d.capacity[name] for d in devices})
                top = max(amounts.values())
                if min(amounts.values()) < top:
                    best = next(d.capacity[name] for d in devices if amounts[d.name] == top)
                    return node, name, best, [d.name for d in devices if amounts[d.name] >= top]
        raise LookupError(
            f"no capacity of {self.driver} has different values on one node's devices "
            f"(a quantity selector could not tell them apart); capacities seen per node: {seen or 'none'}"
        )

    def together(self) -> Together:
        """The devices of each node that can be allocated together (allocationMode All, a whole node's
        worth), picked by one selector on every node. None (every device) when no device consumes shared
        counters; otherwise the largest group ``<attribute> == <value>`` whose counter consumption fits
        the pool's counter sets on every node (e.g. whole GPUs, or all partitions, not both). Raises
        LookupError when no such group exists.
        Source: KEP-4815 (sharedCounters / consumesCounters: devices drawing on one counter set exceed
        it together)."""
        nodes = self.nodes()
        if not any(d.consumes for d in self.devices):
            return Together(None, {n: self.on_node(n) for n in nodes})
        best = None
        for name, value in self._attribute_values(nodes):
            groups = {n: [d for d in self.on_node(n) if d.attributes[name] == value] for n in nodes}
            size = min(len(g) for g in groups.values())
            fits = all(counters.fit(g, self.counter_sets) for g in groups.values())
            if size and fits and (best is None or size > best[0]):
                best = size, f"{cel_attribute(name)} == {cel_literal(value)}", groups
        if best is None:
            raise LookupError(
                f"no attribute value of {self.driver} selects devices that can be allocated together on every "
                f"node (their consumesCounters exceed the sharedCounters); counter sets: {self.counter_sets}"
            )
        return Together(best[1], best[2])

    def pinned(self) -> Together:
        """One device of the first driver node, picked by a string/int attribute value no other device of that
        node has and fitting its counter sets alone: what KEP5970-7 takes when no group fits together
        (:meth:`together` raised), so the core test runs (issue 24 §3). Raises LookupError when none."""
        for node in self.nodes()[:1]:
            devices = self.on_node(node)
            for d in (d for d in devices if counters.fit([d], self.counter_sets)):
                for name, value in sorted(d.attributes.items()):
                    if (
                        d.types.get(name) in ("string", "int")
                        and [o.attributes.get(name) for o in devices].count(value) == 1
                    ):
                        return Together(f"{cel_attribute(name)} == {cel_literal(value)}", {node: [d]})
        raise LookupError(f"no device of {self.driver} fits its counter sets alone with an attribute value of its own")

    def _attribute_values(self, nodes: list[str]) -> list[tuple[str, object]]:
        """``(attribute, value)`` pairs of string/int/bool attributes every device of ``nodes`` publishes."""
        devices = [d for n in nodes for d in self.on_node(n)]
        names = [
            n
            for n in sorted(self._common(devices, "attributes"))
            if all(d.types.get(n) in ("string", "int", "bool") for d in devices)
        ]
        return [(n, v) for n in names for v in sorted({d.attributes[n] for d in devices}, key=repr)]

    def selector_for(self, device: Device, on_node: bool = False) -> str:
        """A CEL selector (equality on a string/int attribute) matching ``device`` and no other published device
        (``on_node``: none ``device.node`` can use, its pod pinned there). Raises LookupError naming the device."""
        node = device.node if on_node else ""
        others = [d for d in self.devices if d.key != device.key and not (node and d.node and d.node != node)]
        for name in sorted(device.attributes):
            value = device.attributes[name]
            if device.types.get(name) in ("string", "int") and all(d.attributes.get(name) != value for d in others):
                return f"{cel_attribute(name)} == {cel_literal(value)}"
        raise LookupError(f"device {device.pool}/{device.name} has no attribute value that no other device shares")

    def with_binding_conditions(self, skip: str = "") -> Device:
        """The first published device with ``bindingConditions`` (KEP-5007), none named ``skip``; raises
        LookupError when none."""
        for dev in self.devices:
            if dev.binding_conditions and dev.name != skip:
                return dev
        raise LookupError(f"no device of {self.driver} publishes bindingConditions")

    def numeric_attribute(self) -> str:
        """An int attribute every device has (for CEL selectors); raises LookupError when none."""
        for name in sorted(self._common(self.devices, "attributes")):
            if all(d.types.get(name) == "int" for d in self.devices):
                return name
        raise LookupError(f"no int attribute on every device of {self.driver}")

    def sample(self, count: int = 2) -> dict:
        """``{device: {attributes, capacity}}`` of the first ``count`` devices (evidence for skips)."""
        return {d.name: {"attributes": d.attributes, "capacity": d.capacity} for d in self.devices[:count]}
