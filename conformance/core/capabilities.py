"""Capabilities: what the cluster and driver offer, discovered once per run into a frozen value (design.md §8).

:func:`evaluate` is pure: it turns discovered facts (from conformance.k8s.discovery and the node access
probe) and the driver profile into one :class:`Capability` per name of
:data:`conformance.core.markers.CAPABILITIES`, each with evidence. A ``driver.*`` capability the profile
declares but the slices show the driver does not deliver is ``broken``: tests requiring it fail instead of
skipping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .markers import CAPABILITIES
from .profile import DriverProfile

DISRUPTIONS = ("node_reboot", "controller_manager_restart", "driver_reinstall")  # facts.disruptions


@dataclasses.dataclass(frozen=True)
class Capability:
    """``available`` with ``evidence`` (why); ``broken``: declared by the profile but not delivered;
    ``cluster_lacks``: declared by the profile but the cluster does not serve the feature (its gate is off), so
    the run cannot check it — shown in the summary, not held against the driver."""

    name: str
    available: bool
    evidence: str
    broken: bool = False
    cluster_lacks: bool = False


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """The run's capabilities by name (read-only)."""

    items: Mapping[str, Capability]

    def has(self, name: str) -> bool:
        """Whether capability ``name`` is available (unknown names raise KeyError)."""
        return self.items[name].available

    def evidence(self, name: str) -> str:
        """The evidence text of ``name``."""
        return self.items[name].evidence

    def as_dict(self) -> dict[str, dict]:
        """``{name: {"available", "evidence", "broken", "cluster_lacks"}}`` for run.json."""
        return {
            n: {"available": c.available, "evidence": c.evidence, "broken": c.broken, "cluster_lacks": c.cluster_lacks}
            for n, c in sorted(self.items.items())
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]]) -> Capabilities:
        """Inverse of :meth:`as_dict` (xdist workers read the controller's capabilities)."""
        return cls(
            {
                n: Capability(
                    n,
                    bool(v["available"]),
                    str(v["evidence"]),
                    bool(v.get("broken", False)),
                    bool(v.get("cluster_lacks", False)),
                )
                for n, v in data.items()
            }
        )


# gates a component other than kube-apiserver acts on: "kubelet" (checked on every kubelet) or
# "kubelet+apiserver" (the kubelet writes a field the apiserver drops while its own gate is off)
GATE_COMPONENT = {
    "KubeletPodResourcesDynamicResources": "kubelet",
    "KubeletPodResourcesGet": "kubelet",
    "ResourceHealthStatus": "kubelet+apiserver",  # pod status allocatedResourcesStatus (KEP-4680)
}


def _gate(name: str, facts: Mapping[str, Any]) -> Capability:
    gate = name.split(".", 1)[1]
    component = GATE_COMPONENT.get(gate, "apiserver")
    if component.startswith("kubelet"):
        per_node = {n: g[gate] for n, g in (facts.get("kubelet_gates") or {}).items() if gate in g}
        if per_node:
            on = all(per_node.values())
            evidence = f"kubelet metrics kubernetes_feature_enabled{{name={gate}}}: " + ", ".join(
                f"{n}={int(v)}" for n, v in sorted(per_node.items())
            )
            if component == "kubelet" or not on:
                return Capability(name, on, evidence)
            server = _apiserver_gate(name, gate, facts)
            return Capability(name, server.available, f"{evidence}; {server.evidence}")
    return _apiserver_gate(name, gate, facts)


def _apiserver_gate(name: str, gate: str, facts: Mapping[str, Any]) -> Capability:
    gates = facts.get("feature_gates") or {}
    if gate in gates:
        return Capability(
            name,
            bool(gates[gate]),
            f"kube-apiserver metrics kubernetes_feature_enabled{{name={gate}}} = {int(bool(gates[gate]))}",
        )
    configured = facts.get("configured_gates") or {}
    if gate in configured:
        return Capability(name, bool(configured[gate]), f"cluster configured --feature-gates {gate}={configured[gate]}")
    return Capability(
        name,
        False,
        f"feature gate {gate} is not reported by kube-apiserver metrics (Kubernetes {facts.get('k8s_version', '?')})",
    )


def _per_node(devices: list[Mapping]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in devices:
        out[d.get("node") or "<no node>"] = out.get(d.get("node") or "<no node>", 0) + 1
    return out


def _driver(name: str, facts: Mapping[str, Any], profile: DriverProfile, gates: Mapping[str, Capability]) -> Capability:
    key = name.split(".", 1)[1]
    src = f"profile {profile.name} ({profile.source or 'built-in'})"
    if key == "admin_access_signal":
        if not profile.admin_access_signal:
            return Capability(
                name, False, f"{src} names no admin_access_signal (the driver shows nothing for adminAccess results)"
            )
        return _driver("driver.admin_access", facts, profile, gates)
    if not profile.declares(key):
        return Capability(name, False, f"{src} does not declare {key}")
    devices = list(facts.get("devices") or [])
    per_node = _per_node(devices)
    gate_for = {
        "admin_access": "gate.DRAAdminAccess",
        "prioritized_list": "gate.DRAPrioritizedList",
        "partitions": "gate.DRAPartitionableDevices",
        "consumable_capacity": "gate.DRAConsumableCapacity",
        "taints": "gate.DRADeviceTaints",
        "published_taints": "gate.DRADeviceTaints",
        "device_status": "gate.DRAResourceClaimDeviceStatus",
        "binding_conditions": "gate.DRADeviceBindingConditions",
    }
    if key in gate_for and not gates[gate_for[key]].available:
        return Capability(
            name,
            False,
            f"{src} declares {key} but the cluster lacks it: {gates[gate_for[key]].evidence}",
            cluster_lacks=True,
        )
    if key == "multiple_devices":
        best = max(per_node.values(), default=0)
        if best < 2:
            return Capability(
                name,
                False,
                f"{src} declares multiple_devices but the driver's slices show at most "
                f"{best} device(s) per node: {per_node}",
                broken=True,
            )
        return Capability(name, True, f"slices show devices per node: {per_node}")
    if key == "partitions":
        if not any(d.get("shared_counters") or d.get("consumes_counters") for d in devices):
            return Capability(
                name,
                False,
                f"{src} declares partitions but no slice of {profile.driver} has sharedCounters or consumesCounters",
                broken=True,
            )
        return Capability(name, True, "slices publish sharedCounters/consumesCounters")
    if key == "consumable_capacity":
        if not any(d.get("allow_multiple_allocations") for d in devices):
            return Capability(
                name,
                False,
                f"{src} declares consumable_capacity but no device of {profile.driver} sets allowMultipleAllocations",
                broken=True,
            )
        return Capability(name, True, "devices set allowMultipleAllocations")
    if key == "published_taints":
        tainted = sorted(f"{d.get('pool')}/{d.get('device')}" for d in devices if d.get("taints"))
        if not tainted:
            return Capability(
                name,
                False,
                f"{src} declares published_taints but no device of {profile.driver} has taints",
                broken=True,
            )
        return Capability(name, True, f"devices with taints: {tainted[:8]}")
    if key == "binding_conditions":
        if not any(d.get("binding_conditions") for d in devices):
            return Capability(
                name,
                False,
                f"{src} declares binding_conditions but no device of {profile.driver} publishes bindingConditions",
                broken=True,
            )
        return Capability(name, True, "devices publish bindingConditions")
    return Capability(name, True, f"{src} declares {key}: true")


# Allocator behaviours a feature gate turns on but a Kubernetes release does not deliver: capability ->
# {minor: evidence}. Measured with suites/allocation/test_constraints.py on the local cluster (v1.34.4
# fails, v1.35.4 / v1.36.3 / v1.37.2 pass); upstream kubernetes/kubernetes#140438.
KNOWN_ALLOCATOR_GAPS = {
    "allocator.distinct_attribute": {
        "1.34": "the 1.34 kube-scheduler allocator accepts devices that share the distinctAttribute value "
        "(measured on v1.34.4; fixed by 1.35.4; kubernetes/kubernetes#140438)"
    },
    "allocator.result_tolerations": {
        "1.34": "the 1.34 kube-scheduler allocator never copies a request's tolerations into "
        "status.allocation.devices.results[].tolerations (measured with suites/taints on v1.34.4: the result "
        "has none; k8s.io/dynamic-resource-allocation v0.34.4 never sets the field, v0.36.2 does)"
    },
}
# the gate each allocator capability needs, and the words of its evidence when that gate is off
ALLOCATOR_GATES = {
    "allocator.distinct_attribute": ("gate.DRAConsumableCapacity", "distinctAttribute needs DRAConsumableCapacity"),
    "allocator.result_tolerations": ("gate.DRADeviceTaints", "tolerations in allocation results need DRADeviceTaints"),
}


def _allocator(name: str, facts: Mapping[str, Any], gates: Mapping[str, Capability]) -> Capability:
    gate_name, needs = ALLOCATOR_GATES[name]  # distinctAttribute is part of KEP-5075, tolerations of KEP-5055
    gate = gates[gate_name]
    if not gate.available:
        return Capability(name, False, f"{needs}: {gate.evidence}")
    version = str(facts.get("k8s_version") or "")
    minor = ".".join(version.lstrip("v").split(".")[:2])
    gap = KNOWN_ALLOCATOR_GAPS.get(name, {}).get(minor)
    if gap:
        return Capability(name, False, f"Kubernetes {version}: {gap}")
    return Capability(name, True, f"Kubernetes {version} with {gate_name.split('.', 1)[1]} on; no known allocator gap")


# Control-plane behaviours a gate turns on but a Kubernetes release does not deliver: capability -> (the gate it
# needs, {minor: evidence}). Measured with suites/extended_resources on the local cluster.
KNOWN_PLATFORM_GAPS = {
    "platform.extended_claim_cleanup_on_completion": (
        "gate.DRAExtendedResource",
        {
            "1.34": "the 1.34 kube-controller-manager keeps the claim generated for a pod's extended resources "
            "allocated and reserved for the pod after the pod Succeeded (measured on v1.34.4: still reserved "
            "120 s later; it goes only with the pod, through its ownerReference)"
        },
    ),
}


def _platform(name: str, facts: Mapping[str, Any], gates: Mapping[str, Capability]) -> Capability:
    gate_name, gaps = KNOWN_PLATFORM_GAPS[name]
    gate = gates[gate_name]
    if not gate.available:
        return Capability(name, False, gate.evidence)
    version = str(facts.get("k8s_version") or "")
    gap = gaps.get(".".join(version.lstrip("v").split(".")[:2]))
    if gap:
        return Capability(name, False, f"Kubernetes {version}: {gap}")
    return Capability(name, True, f"Kubernetes {version} with {gate_name.split('.', 1)[1]} on; no known gap")


def evaluate(facts: Mapping[str, Any], profile: DriverProfile) -> Capabilities:
    """Capabilities from ``facts``: ``served_versions`` {version: [plurals]}, ``feature_gates`` (apiserver
    metrics), ``kubelet_gates`` {node: gates}, ``configured_gates``, ``k8s_version``, ``devices`` (see
    conformance.k8s.discovery.devices_of), ``node_access``/``plugin_restart``/``kubelet_restart``/
    ``plugin_registration`` and the :data:`DISRUPTIONS`: ``(bool, evidence)``."""
    served = facts.get("served_versions") or {}
    items: dict[str, Capability] = {}
    versions_text = ", ".join(sorted(served)) or "none"
    for name in CAPABILITIES:
        if name.startswith("api.") and name != "api.devicetaintrules":
            version = name.split(".", 1)[1]
            items[name] = Capability(name, version in served, f"resource.k8s.io versions served: {versions_text}")
        elif name == "api.devicetaintrules":
            where = sorted(v for v, plurals in served.items() if "devicetaintrules" in plurals)
            items[name] = Capability(name, bool(where), f"devicetaintrules served in: {', '.join(where) or 'none'}")
        elif name.startswith("gate."):
            items[name] = _gate(name, facts)
    for name in ("node_access", "plugin_restart", "kubelet_restart", "plugin_registration", *DISRUPTIONS):
        ok, why = facts.get(name) or (False, "not probed")
        items[name] = Capability(name, bool(ok), why)
    per_node = _per_node(facts.get("devices") or [])
    items["multi_node"] = Capability(
        "multi_node",
        len([n for n in per_node if n != "<no node>"]) >= 2,
        f"driver {profile.driver} publishes devices on nodes {sorted(per_node) or 'none'}",
    )
    for name in CAPABILITIES:
        if name.startswith("driver."):
            items[name] = _driver(name, facts, profile, items)
        elif name.startswith("allocator."):
            items[name] = _allocator(name, facts, items)
        elif name.startswith("platform."):
            items[name] = _platform(name, facts, items)
    return Capabilities(items)
