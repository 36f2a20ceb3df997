"""Device shards: every node's devices split into disjoint shards (the run uses one per device of the node with
the fewest: device slots, :mod:`conformance.runner.device_slots`), so tests that start pods on a few devices of
their own run beside each other instead of one at a time (issue 26 §1).

A shard is picked by a CEL selector on one ``int`` or ``string`` attribute whose values differ between the
devices of every node (an index or a UUID), added to every request of the claims a sharded test creates, on top
of the DeviceClass.
Value ``v`` belongs to shard ``rank(v) % shards``, its rank among the sorted values of its node (so every node
has a device in every shard, whether the values repeat on each node, like an index, or are unique in the
cluster, like a UUID; breaker s17 F4), or among all values when ranking per node would put one value in two
shards. A value is in one shard only, so the shards are disjoint on every node whatever the driver names its
devices. Of the candidate attributes, the one giving the most usable shards wins. Built from the devices the
run discovered (``facts["devices"]``: :func:`conformance.dra.inventory.facts`), the same on every worker.

Sources: resource.k8s.io/v1 DeviceRequest ``exactly.selectors`` / DeviceSubRequest ``selectors`` (ANDed with
the DeviceClass's; KEP-4381), CEL ``device.attributes["<domain>"].<id>`` (dra-protocols.md §6).
"""

from __future__ import annotations

import dataclasses
import json

from conformance.dra.cel import cel_attribute_in
from conformance.dra.inventory import qualify


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    """How the driver's devices split into ``shards`` disjoint shards: ``attribute`` (qualified name),
    ``by_shard`` (shard index -> sorted attribute values), ``size`` (the fewest untainted devices any shard has
    on any driver node), ``usable`` (sorted indices of the shards holding at least one untainted device on every
    driver node: the device slots a test may take, :mod:`conformance.runner.device_slots`)."""

    attribute: str
    shards: int
    by_shard: dict
    size: int
    usable: tuple = ()

    def selector_of(self, indices) -> str:
        """The CEL expression picking the devices of the shards ``indices`` together (IndexError when one is out
        of range): ``<attribute> in [values]``, the values in sorted order."""
        values = []
        for index in indices:
            if not 0 <= index < self.shards:
                raise IndexError(f"shard {index} of a plan with {self.shards} shards")
            values += self.by_shard[index]
        return cel_attribute_in(self.attribute, sorted(values))


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
    best: ShardPlan | None = None
    for name in _candidates(driver, devices):
        shard_of = _shard_of(devices, name, shards)
        ranked = sorted(shard_of)
        by_shard = {i: [v for v in ranked if shard_of[v] == i] for i in range(shards)}
        nodes = {d["node"] for d in devices}
        usable = [d for d in devices if not d.get("taints")]  # a tainted device may refuse a pod
        sizes = {
            i: min(sum(1 for d in usable if d["node"] == n and shard_of[d["attributes"][name]] == i) for n in nodes)
            for i in range(shards)
        }
        slots = tuple(i for i in range(shards) if sizes[i] > 0)
        found = ShardPlan(qualify(driver, name), shards, by_shard, min(sizes.values()), slots)
        if best is None or len(found.usable) > len(best.usable):
            best = found
    return best


def _shard_of(devices: list[dict], name: str, shards: int) -> dict:
    """Value of attribute ``name`` -> shard: its rank on its node modulo ``shards``, or its rank among all values
    when one value would land in two shards that way (module docstring)."""
    per_node: dict[str, list] = {}
    for d in devices:
        per_node.setdefault(d["node"], []).append(d["attributes"][name])
    out: dict = {}
    for values in per_node.values():
        for i, v in enumerate(sorted(values)):
            if out.setdefault(v, i % shards) != i % shards:
                return {v: i % shards for i, v in enumerate(sorted({d["attributes"][name] for d in devices}))}
    return out


def slot_count(devices: list[dict]) -> int:
    """How many device slots a run's devices (``facts["devices"]``) give: the fewest devices any node has, so each
    slot holds a device on every node (0 without devices)."""
    per_node: dict[str, int] = {}
    for d in devices:
        per_node[d.get("node") or ""] = per_node.get(d.get("node") or "", 0) + 1
    return min(per_node.values(), default=0)


def unscoped_requests(obj, selector: str) -> list[str]:
    """Names of ``obj``'s requests (a claim or template, any API version) whose text lacks ``selector``."""
    spec = obj.get("spec") or {}
    spec = spec.get("spec", spec) if obj.get("kind") == "ResourceClaimTemplate" else spec
    needle = json.dumps(selector)[1:-1]
    out = []
    for req in (spec.get("devices") or {}).get("requests") or []:
        subs = req.get("firstAvailable")
        if not subs:
            out += [] if needle in json.dumps(req) else [req.get("name")]
            continue
        out += [f"{req.get('name')}/{sub.get('name')}" for sub in subs if needle not in json.dumps(sub)]
    return out


def extended_resources(pod) -> list[str]:
    """Extended resources (``<domain>/<name>``, not ``kubernetes.io``) a Pod's containers ask for."""
    spec = pod.get("spec") or {}
    found = set()
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        for key in list(res.get("requests") or {}) + list(res.get("limits") or {}):
            if "/" in key and not key.split("/", 1)[0].endswith("kubernetes.io"):
                found.add(key)
    return sorted(found)
