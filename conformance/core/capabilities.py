"""Capabilities: what the cluster and driver offer, discovered once per run into a frozen value (design.md §8).

:func:`evaluate` is pure: it turns discovered facts (conformance.k8s.discovery, the node access probe) and the driver
profile into one :class:`Capability` per name of :data:`conformance.core.markers.CAPABILITIES`, with evidence.
A ``driver.*`` capability the profile declares but the slices show the driver does not deliver is ``broken``:
tests requiring it fail instead of skipping. A feature the driver's ResourceSlices publish (:data:`SLICE_FEATURES`)
counts as declared even when the profile is silent; an unreadable gate (``gate_unknown``) never excuses one.
:data:`DEFAULT_ON` capabilities hold unless the profile declares them false (a waiver shown in summary.md); those
of :data:`DEFAULT_ON_NEEDS` only where the cluster serves the feature; ``opaque_config`` wherever the profile carries
a sample; :data:`MISSION_DEFAULTS` left out are held as declared (issue 24 §1: no PASS by omission).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from conformance.core import profile_identity, release_gaps
from conformance.core.markers import CAPABILITIES
from conformance.core.profile import DriverProfile
from conformance.core.slice_features import DRIVER_GATES, SLICE_FEATURES, devices_per_node

DISRUPTIONS = (  # facts.disruptions
    "node_reboot",
    "controller_manager_restart",
    "driver_reinstall",
    "driver_upgrade",
    "driver_surge_update",
    "driver_downgrade",
)
HANDLE_FACTS = (*DISRUPTIONS, "driver_slices_writable")  # (able, evidence) facts of the cluster and driver handles


@dataclasses.dataclass(frozen=True)
class Capability:
    """``available`` with ``evidence`` (why); ``broken``: declared by the profile but not delivered;
    ``cluster_lacks``: declared by the profile but the cluster does not serve the feature (its gate is known to
    be off), so the run cannot check it — shown in the summary, not held against the driver; ``gate_unknown``
    (``gate.*``): the gate's state could not be read (kube-apiserver /metrics unreadable or silent about it);
    ``declared`` (``driver.*``): the profile declares it, or the driver's slices publish it (held to it)."""

    name: str
    available: bool
    evidence: str
    broken: bool = False
    cluster_lacks: bool = False
    gate_unknown: bool = False
    declared: bool = False


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
        """``{name: {"available", "evidence", "broken", "cluster_lacks", "gate_unknown", "declared"}}`` for
        run.json (whose writer narrows ``declared`` to the capabilities the selected tests exercise)."""
        return {
            n: {f.name: getattr(c, f.name) for f in dataclasses.fields(c)[1:]} for n, c in sorted(self.items.items())
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
                    bool(v.get("gate_unknown", False)),
                    bool(v.get("declared", False)),
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
            return dataclasses.replace(server, evidence=f"{evidence}; {server.evidence}")
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
    if gate in configured and facts.get("configured_gates_stated") and not configured[gate]:
        return Capability(  # the user's word that a gate is off never excuses a declared capability
            name,
            False,
            f"--cluster-feature-gates states {gate}=false (not measured: kube-apiserver metrics do not report it)",
            gate_unknown=True,
        )
    if gate in configured:
        how = "stated by --cluster-feature-gates" if facts.get("configured_gates_stated") else "cluster configured"
        return Capability(name, bool(configured[gate]), f"{how} {gate}={configured[gate]}")
    error = facts.get("feature_gates_error")
    why = (
        f"kube-apiserver /metrics could not be read ({error})"
        if error
        else f"it is not reported by kube-apiserver metrics (Kubernetes {facts.get('k8s_version', '?')})"
    )
    return Capability(
        name,
        False,
        f"the state of feature gate {gate} could not be read: {why}; fix: grant the run's user get on "
        'nonResourceURL /metrics (ClusterRole rule nonResourceURLs: ["/metrics"], verbs: ["get"]) or run on a '
        "cluster whose --feature-gates the harness knows (--cluster local)",
        gate_unknown=True,
    )


def _undeclared(name: str, key: str, src: str, devices: list[Mapping], gates: Mapping[str, Capability]) -> Capability:
    """A driver capability the profile does not declare: unavailable, unless the driver's slices publish it (a
    driver cannot skip its partition tests by not declaring them): then available and counted as declared."""
    shown = SLICE_FEATURES[key][0](devices) if key in SLICE_FEATURES else []
    if not shown:
        return Capability(name, False, f"{src} does not declare {key}")
    gate = gates[DRIVER_GATES[key]]
    if not gate.available and not gate.gate_unknown:
        return Capability(name, False, f"{src} does not declare {key} and the cluster lacks it: {gate.evidence}")
    return Capability(
        name,
        True,
        f"{SLICE_FEATURES[key][1]} ({', '.join(shown[:8])}): published in the driver's ResourceSlices but not "
        f"declared by {src}; held to it as declared",
        declared=True,
    )


def _measured_multiple(
    name: str, src: str, profile: DriverProfile, devices: list[Mapping], gates: Mapping[str, Capability]
) -> Capability:
    """``driver.multiple_devices`` of a profile that is silent or says false: the slices are the measured
    truth (review 5 finding 5): a node publishing two or more devices makes it available and held as declared,
    so ``multiple_devices: false`` cannot opt out of the multi-device tests (e.g. partial device status)."""
    per_node = devices_per_node(devices)
    if max(per_node.values(), default=0) < 2:
        return _undeclared(name, "multiple_devices", src, devices, gates)
    said = "declares multiple_devices: false" if "multiple_devices" in profile.capabilities else "is silent"
    return Capability(
        name,
        True,
        f"the driver's slices show devices per node {per_node} (two or more on a node) while {src} {said}; "
        "held to it as measured",
        declared=True,
    )


DEFAULT_ON = {  # profile capabilities that hold unless declared false, and what false means (issue 24 §1)
    "cdi": "NodePrepareResources names no device and the driver writes no CDI spec for a claim",
    "container_isolation": "a device shows in every container of the pod, e.g. a netdev in the pod's netns",
    "taints": "the driver's devices are not checked against DeviceTaintRules and tolerations (KEP-5055)",
    "shared_claims": "the driver cannot let several pods share one claim (the shared-claim tests skip)",
    "admin_access": "the driver does not support adminAccess claims (the admin_access mission area is waived)",
    "prioritized_list": "the driver's devices are not tried as firstAvailable alternatives (mission area waived)",
    "opaque_config": "the driver's opaque config is not checked (the opaque config tests skip)",
}
# default-on capabilities held only where the cluster serves the feature: key -> the gate it needs (the
# DeviceTaintRule tests require api.devicetaintrules themselves; the toleration tests need the gate only)
DEFAULT_ON_NEEDS = {k: (DRIVER_GATES[k],) for k in ("taints", "admin_access", "prioritized_list")}
MISSION_DEFAULTS = ("shared_claims", "admin_access", "prioritized_list", "opaque_config")  # held when left out


def _default_on_served(name: str, key: str, src: str, items: Mapping[str, Capability]) -> Capability:
    """A :data:`DEFAULT_ON_NEEDS` capability the profile leaves out: available and held as declared when the
    cluster serves what it needs (a gate whose state could not be read counts as on, as in :func:`_undeclared`),
    else unavailable and not held, with the cluster's evidence. Review 5 finding 6: DeviceTaintRules are applied
    by the control plane to any driver's devices, so a driver cannot opt out by leaving the key out."""
    needs = [items[n] for n in DEFAULT_ON_NEEDS[key]]
    lacking = [c for c in needs if not c.available and not c.gate_unknown]
    if lacking:
        why = "; ".join(f"{c.name}: {c.evidence}" for c in lacking)
        return Capability(name, False, f"{src} does not declare {key} and the cluster lacks it: {why}")
    served = "; ".join(f"{c.name}: {c.evidence}" for c in needs)
    held = f"{src} does not declare {key}: false and the cluster serves it ({served}); held to it"
    return Capability(name, True, held, declared=True)


def _driver(name: str, facts: Mapping[str, Any], profile: DriverProfile, gates: Mapping[str, Capability]) -> Capability:
    key = name.split(".", 1)[1]
    src = f"profile {profile.name} ({profile.source or 'built-in'})"
    cap = _from_profile(name, key, src, facts, profile, gates)
    if cap is not None:
        return cap
    devices = list(facts.get("devices") or [])
    if key == "multiple_devices" and not profile.declares(key):
        return _measured_multiple(name, src, profile, devices, gates)
    if not profile.declares(key) and key != "extended_resource_name":
        return _undeclared(name, key, src, devices, gates)
    gate = gates[DRIVER_GATES[key]] if key in DRIVER_GATES else None
    if gate is not None and not gate.available:
        if gate.gate_unknown:  # not excused: the verdict fails it as declared but not available
            return Capability(name, False, f"{src} declares {key} but {gate.evidence}", declared=True)
        lacks = f"{src} declares {key} but the cluster lacks it: {gate.evidence}"
        return Capability(name, False, lacks, cluster_lacks=True, declared=True)
    return _declared(name, key, src, profile, devices)


def _from_profile(
    name: str, key: str, src: str, facts: Mapping[str, Any], profile: DriverProfile, gates: Mapping[str, Capability]
) -> Capability | None:
    """The capability when the profile alone settles it (visibility, default-on, named fields); else None."""
    if key == "names_devices":  # a visibility field, on unless the profile opts out: then a summary waiver
        if profile.visibility.names_devices:
            return Capability(name, True, f"{src} does not declare visibility.names_devices: false")
        return Capability(
            name,
            False,
            f"{src} declares visibility.names_devices: false (its probe output names no device: the device checks "
            "prove that a device is visible, not which one)",
        )
    if key in DEFAULT_ON and not profile.capabilities.get(key, True):  # an opt-out: a waiver in summary.md
        return Capability(name, False, f"{src} declares {key}: false ({DEFAULT_ON[key]})")
    if key in DEFAULT_ON_NEEDS and key not in profile.capabilities:
        return _default_on_served(name, key, src, gates)
    if key == "opaque_config" and key not in profile.capabilities:  # on whenever the profile carries a sample
        if not profile.opaque_parameters:
            return Capability(name, False, f"{src} carries no opaque_config.parameters sample (not claimed)")
        return Capability(name, True, f"{src} carries an opaque_config sample; held to it", declared=True)
    if key in DEFAULT_ON and key not in DRIVER_GATES:  # on unless the profile says otherwise
        held = key in profile.capabilities or key in MISSION_DEFAULTS
        return Capability(name, True, f"{src} does not declare {key}: false", declared=held)
    if key == "extended_resource_name" and not profile.extended_resource_name:
        return Capability(
            name, False, f"{src} names no extended_resource_name (the extended resource its DeviceClass maps, KEP-5004)"
        )
    if key == "consumed_capacity_signal" and profile.consumed_capacity_signal:  # held as consumable_capacity
        return dataclasses.replace(_driver("driver.consumable_capacity", facts, profile, gates), name=name)
    if key in profile_identity.PROFILE_PATTERNS:  # patterns, not flags: off without one (core/profile_identity.py)
        ok, why = profile_identity.availability(key, profile, src)
        return Capability(name, ok, why, declared=ok)  # a pattern given is held to
    if key in ("admin_access_signal", "binding_failure"):
        return _named_device_or_signal(name, key, src, facts, profile, gates)
    return None


def _named_device_or_signal(
    name: str, key: str, src: str, facts: Mapping[str, Any], profile: DriverProfile, gates: Mapping[str, Capability]
) -> Capability:
    """``admin_access_signal`` / ``binding_failure``: off without the profile field, else as the capability
    they build on (``admin_access`` / ``binding_conditions``)."""
    if key == "admin_access_signal":
        if not profile.admin_access_signal:
            return Capability(
                name, False, f"{src} names no admin_access_signal (the driver shows nothing for adminAccess results)"
            )
        cap = _driver("driver.admin_access", facts, profile, gates)
        return dataclasses.replace(cap, name=name, declared=profile.declares(key))
    if not profile.binding_failure_device:
        return Capability(name, False, f"{src} names no binding_failure_device (no device fails to attach)")
    cap = _driver("driver.binding_conditions", facts, profile, gates)
    why = f"device {profile.binding_failure_device} fails to attach ({src}); binding conditions: {cap.evidence}"
    return dataclasses.replace(cap, name=name, evidence=why, declared=True)


def _declared(name: str, key: str, src: str, profile: DriverProfile, devices: list) -> Capability:
    """A capability the profile declares and the cluster serves: checked against the slices where they show it."""
    if key == "multiple_devices":
        per_node = devices_per_node(devices)
        best = max(per_node.values(), default=0)
        if best < 2:
            return Capability(
                name,
                False,
                f"{src} declares multiple_devices but the driver's slices show at most "
                f"{best} device(s) per node: {per_node}",
                broken=True,
                declared=True,
            )
        return Capability(name, True, f"slices show devices per node: {per_node}", declared=True)
    if key in SLICE_FEATURES:
        find, shown_text, missing = SLICE_FEATURES[key]
        shown = find(devices)
        if not shown:
            missing = missing.format(driver=profile.driver)
            return Capability(name, False, f"{src} declares {key} but {missing}", broken=True, declared=True)
        return Capability(name, True, f"{shown_text}: {shown[:8]}", declared=True)
    if key == "extended_resource_name":
        return Capability(
            name, True, f"{src} names extended_resource_name {profile.extended_resource_name}", declared=True
        )
    return Capability(name, True, f"{src} declares {key}: true", declared=True)


def _multi_node(facts: Mapping[str, Any], profile: DriverProfile) -> Capability:
    """``multi_node``: two or more expected driver nodes (``facts["expected_nodes"]``, else the nodes with
    devices); broken when the nodes with devices differ from them (issue 24 §2: a missing node fails, named),
    when they are unknown (``known`` False: taken from the slices) or a DaemonSet is not ready (``problems``)."""
    published = sorted(n for n in devices_per_node(facts.get("devices") or []) if n != "<no node>")
    expected = facts.get("expected_nodes") or {"nodes": published, "source": "the nodes with devices"}
    wanted, odd = sorted(expected["nodes"]), sorted(set(expected["nodes"]) ^ set(published))
    evidence = f"expected driver nodes {wanted} ({expected['source']}); driver {profile.driver} publishes devices on "
    evidence += f"nodes {published or 'none'}" + (f"; differing: {odd}" if odd else "")
    doubt = ["expected driver nodes unknown"] if expected.get("known") is False else []
    doubt += list(expected.get("problems") or [])  # DaemonSets not ready where they should run
    evidence += "".join(f"; {d}" for d in doubt)
    return Capability("multi_node", len(wanted) >= 2, evidence, broken=len(wanted) >= 2 and bool(odd or doubt))


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
    for name in ("node_access", "plugin_restart", "kubelet_restart", "plugin_registration", *HANDLE_FACTS):
        ok, why = facts.get(name) or (False, "not probed")
        items[name] = Capability(name, bool(ok), why)
    items["multi_node"] = _multi_node(facts, profile)
    for name in CAPABILITIES:
        if name.startswith("driver."):
            items[name] = _driver(name, facts, profile, items)
        elif name.startswith("allocator."):
            items[name] = Capability(name, *release_gaps.allocator(name, facts, items))
        elif name.startswith("platform."):
            items[name] = Capability(name, *release_gaps.platform(name, facts, items))
    return Capabilities(items)
