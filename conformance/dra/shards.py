"""Device shards: each pytest-xdist worker gets its own share of every node's devices, so tests that start pods
on a few devices of their own run beside each other instead of one at a time (issue 26 §1).

A shard is picked by a CEL selector on one ``int`` or ``string`` attribute whose values differ between the
devices of every node (an index or a UUID), added to every request of the claims a sharded test creates, on top
of the DeviceClass.
Value ``v`` (of the sorted values all nodes publish) belongs to shard ``rank(v) % shards``, so the shards are
disjoint on every node whatever the driver names its devices. Built from the devices the run discovered
(``facts["devices"]``: :func:`conformance.dra.inventory.facts`), the same on every worker.

Sources: resource.k8s.io/v1 DeviceRequest ``exactly.selectors`` / DeviceSubRequest ``selectors`` (ANDed with
the DeviceClass's; KEP-4381), CEL ``device.attributes["<domain>"].<id>`` (dra-protocols.md §6).
"""

from __future__ import annotations

import dataclasses

from conformance.dra.cel import cel_attribute, cel_literal
from conformance.dra.inventory import qualify


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    """How ``shards`` workers split the driver's devices: ``attribute`` (qualified name), ``by_shard`` (shard
    index -> sorted attribute values), ``size`` (the fewest untainted devices any shard has on any driver
    node: a test needing more devices per node than that keeps the device lock)."""

    attribute: str
    shards: int
    by_shard: dict
    size: int

    def selector(self, index: int) -> str:
        """The CEL expression picking shard ``index``'s devices (IndexError when out of range)."""
        if not 0 <= index < self.shards:
            raise IndexError(f"shard {index} of a plan with {self.shards} shards")
        values = ", ".join(cel_literal(v) for v in self.by_shard[index])
        return f"{cel_attribute(self.attribute)} in [{values}]"


def _candidates(driver: str, devices: list[dict]) -> list[str]:
    """Attribute names (as published) every device has as an ``int`` or a ``string`` (``facts()``'s
    ``attribute_types``; a ``version`` or ``bool`` never: ``semver in [...]`` has no CEL overload, so every
    sharded claim would fail to allocate), distinct on each node; those with the fewest values over all nodes
    first (an index before a UUID: the shortest ``in [...]`` lists), then ints, then by name."""
    common = set.intersection(*[set(d["attributes"]) for d in devices])
    found = []
    for name in sorted(common):
        kinds = {(d.get("attribute_types") or {}).get(name) for d in devices}
        if len(kinds) != 1 or not kinds <= {"int", "string"}:
            continue
        per_node: dict[str, list] = {}
        for d in devices:
            per_node.setdefault(d["node"], []).append(d["attributes"][name])
        if all(len(set(v)) == len(v) for v in per_node.values()):
            found.append((len({d["attributes"][name] for d in devices}), kinds != {"int"}, name))
    return [name for *_, name in sorted(found)]


def plan(driver: str, devices: list[dict], shards: int) -> ShardPlan | None:
    """The shard plan of ``devices`` (``facts["devices"]``: dicts with ``node``, ``attributes``,
    ``consumes_counters``) for ``shards`` workers; None when sharding cannot keep tests apart: fewer than 2
    shards, devices without a node, devices drawing on shared counters (KEP-4815: a partition and its parent
    GPU are different devices that cannot both be allocated), or no int or string attribute tells each node's
    devices apart (devices without ``attribute_types`` have none)."""
    if shards < 2 or not devices:
        return None
    if any(not d.get("node") or d.get("consumes_counters") for d in devices):
        return None
    for name in _candidates(driver, devices):
        ranked = sorted({d["attributes"][name] for d in devices})
        shard_of = {v: i % shards for i, v in enumerate(ranked)}
        by_shard = {i: [v for v in ranked if shard_of[v] == i] for i in range(shards)}
        nodes = {d["node"] for d in devices}
        usable = [d for d in devices if not d.get("taints")]  # a tainted device may refuse a pod
        size = min(
            sum(1 for d in usable if d["node"] == n and shard_of[d["attributes"][name]] == i)
            for n in nodes
            for i in range(shards)
        )
        return ShardPlan(qualify(driver, name), shards, by_shard, size)
    return None
