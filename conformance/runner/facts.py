"""Capability discovery (once per run) and run.json.

Facts come from the API (discovery, /version, Nodes, ResourceSlices), component metrics
(``kubernetes_feature_enabled``), the node-access probe and the cluster handle; :func:`discover` turns them
into frozen :class:`~conformance.core.capabilities.Capabilities` with evidence (design.md §8).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from conformance.core import capabilities as caps_mod
from conformance.core.handles import (
    ClusterHandle,
    DowngradesDriver,
    DriverHandle,
    NodeAccess,
    RebootsNode,
    RemovesDriver,
    RestartsControllerManager,
    RestartsKubelet,
    RestartsPlugin,
    SurgeUpdatesDriver,
    UpgradesDriver,
)
from conformance.core.profile import DriverProfile
from conformance.drivers import driver_nodes
from conformance.k8s import discovery
from conformance.k8s.client import K8s
from conformance.node import registration


def collect(
    k8s: K8s,
    profile: DriverProfile,
    *,
    cluster: ClusterHandle | None = None,
    node_access: NodeAccess | None = None,
    driver: DriverHandle | None = None,
) -> dict:
    """The raw facts dict :func:`conformance.core.capabilities.evaluate` reads (plus node facts). Kubelet and
    plugin restarts are the optional abilities RestartsKubelet (node access) and RestartsPlugin (driver)."""
    nodes = [discovery.node_facts(n) for n in discovery.nodes(k8s)]
    kubelet_gates = {n["name"]: discovery.kubelet_feature_gates(k8s, n["name"]) for n in nodes[:8]}
    slices = discovery.driver_slices(k8s, profile.driver)
    apiserver_gates, gates_error = discovery.apiserver_feature_gates(k8s)
    facts: dict[str, Any] = {
        "k8s_version": discovery.server_version(k8s),
        "served_versions": discovery.served_versions(k8s),
        "feature_gates": apiserver_gates,
        "feature_gates_error": gates_error,
        "kubelet_gates": {k: v for k, v in kubelet_gates.items() if v},
        "configured_gates": dict(cluster.feature_gates) if cluster is not None else {},
        "configured_gates_stated": bool(getattr(cluster, "gates_stated", False)),
        "feature_gate_stages": discovery.apiserver_feature_stages(k8s),
        "gate_defaults": dict(getattr(cluster, "gate_defaults", None) or {}),
        "nodes": nodes,
        "devices": discovery.devices_of(slices),
    }
    if node_access is not None:
        facts["node_access"] = node_access.probe()
        facts["kubelet_restart"] = (
            node_access.can_restart_kubelet()
            if isinstance(node_access, RestartsKubelet)
            else (False, f"node access {node_access.mode} cannot restart kubelets")
        )
        facts["plugin_registration"] = (
            registration.access(node_access, nodes[0]["name"]) if nodes else (False, "the cluster has no nodes")
        )
    else:
        facts["node_access"] = (
            False,
            "no node access for this cluster kind (use --cluster local, or "
            "--node-access privileged-pod on an existing cluster)",
        )
        facts["kubelet_restart"] = (False, "no node access")
        facts["plugin_registration"] = (False, "no node access")
    facts["plugin_restart"] = (
        (True, f"the {driver.deploy_mode} deployer restarts the driver's plugin on a node (host process or pod)")
        if isinstance(driver, RestartsPlugin)
        else (False, "the driver was not deployed by the harness (host mode, helm or manifests)")
    )
    facts.update(disruptions(cluster, driver))
    facts["driver_slices_writable"] = slices_writable(driver)
    if driver is not None:  # the nodes the deployment asks for (issue 24 §2); multi_node and run.json read them
        facts["expected_nodes"] = driver_nodes.expected_nodes(k8s, driver).as_dict()
    return facts


def slices_writable(driver: DriverHandle | None) -> tuple[bool, str]:
    """``(able, evidence)``: whether tests may delete the driver's own ResourceSlices (as a kubelet does at
    start-up): only when the run deployed the driver itself, never for one the cluster's admin installed
    (``preinstalled``: issue 22 §1, a run never changes a customer's driver)."""
    if driver is None:
        return False, "no driver handle"
    if driver.deploy_mode == "preinstalled":
        return False, (
            "the driver was installed by the cluster's admin (--driver-deploy preinstalled): the run never deletes "
            "its ResourceSlices (these tests run where the run deploys the driver itself)"
        )
    return True, f"the run deployed the driver ({driver.deploy_mode}) and removes it at the end"


def disruptions(cluster: ClusterHandle | None, driver: DriverHandle | None) -> dict[str, tuple[bool, str]]:
    """``node_reboot``, ``controller_manager_restart`` (optional abilities of the cluster handle: RebootsNode,
    RestartsControllerManager), ``driver_reinstall`` and ``driver_upgrade`` (of the driver handle: RemovesDriver,
    UpgradesDriver), each
    ``(able, evidence)``."""
    kind = type(cluster).__name__ if cluster is not None else "no cluster handle"
    out = {
        "node_reboot": cluster.can_reboot_node()
        if isinstance(cluster, RebootsNode)
        else (False, f"the cluster provider ({kind}) cannot reboot or emulate a reboot of a node"),
        "controller_manager_restart": cluster.can_restart_controller_manager()
        if isinstance(cluster, RestartsControllerManager)
        else (False, f"the cluster provider ({kind}) cannot restart kube-controller-manager"),
    }
    out["driver_reinstall"] = (
        (True, f"the {driver.deploy_mode} deployer stops and starts the driver's plugins")
        if isinstance(driver, RemovesDriver)
        else (False, "the driver's deployer cannot remove and reinstall it (host-mode deployers can)")
    )
    mode = driver.deploy_mode if driver is not None else "no driver handle"
    out["driver_upgrade"] = (
        driver.can_upgrade()
        if isinstance(driver, UpgradesDriver)
        else (False, f"the driver's deployer ({mode}) cannot upgrade it in place (the helm deployer can)")
    )
    out["driver_surge_update"] = (
        driver.can_surge_update()
        if isinstance(driver, SurgeUpdatesDriver)
        else (False, f"the driver's deployer ({mode}) runs no plugin DaemonSet it may update (helm, manifests do)")
    )
    out["driver_downgrade"] = (
        driver.can_downgrade()
        if isinstance(driver, DowngradesDriver)
        else (False, f"the driver's deployer ({mode}) cannot downgrade it in place (the helm deployer can)")
    )
    return out


def discover(
    k8s: K8s,
    profile: DriverProfile,
    *,
    cluster: ClusterHandle | None = None,
    node_access: NodeAccess | None = None,
    driver: DriverHandle | None = None,
) -> tuple[caps_mod.Capabilities, dict]:
    """``(capabilities, facts)`` for this run (facts: see :func:`collect`)."""
    facts = collect(k8s, profile, cluster=cluster, node_access=node_access, driver=driver)
    return caps_mod.evaluate(facts, profile), facts


def gate_stages(facts: dict) -> dict[str, dict]:
    """Per feature gate the API server reports: ``{"stage": GA|BETA|ALPHA|DEPRECATED, "default": bool | None,
    "enabled": bool}``; ``default`` from the release's own ``--help`` (local clusters: ``gate_defaults``), GA
    gates on, else None (unknown). Source: component-base ``kubernetes_feature_enabled{name,stage}``."""
    enabled, defaults = facts.get("feature_gates") or {}, facts.get("gate_defaults") or {}
    out = {}
    for gate, stage in sorted((facts.get("feature_gate_stages") or {}).items()):
        default = defaults[gate][1] if gate in defaults else (True if stage == "GA" else None)
        out[gate] = {"stage": stage, "default": default, "enabled": bool(enabled.get(gate))}
    return out


def run_info(
    *,
    run_id: str,
    started: float,
    cluster_kind: str,
    facts: dict,
    driver: dict,
    profile: str,
    feature_gates_mode: str,
    capabilities: caps_mod.Capabilities,
    finished: float | None = None,
    declared: tuple[str, ...] = (),
    narrowing: dict | None = None,
    node_access: dict | None = None,
    interrupted: bool = False,
) -> dict:
    """The run.json document read by the reporting plugin (shape agreed with conformance/reporting).

    ``declared``: the ``driver.*`` capabilities the driver profile promises or the driver's slices publish
    (Capability.declared); the verdict fails when one of
    them fails, is unavailable or is never exercised (conformance/reporting/summary.py). ``narrowing``: what
    narrowed the run (:func:`conformance.runner.narrowing.load`; None: not recorded yet). ``expected_nodes``:
    the nodes the driver's deployment asks for (conformance.drivers.driver_nodes.ExpectedNodes.as_dict).
    ``node_access``: the run's ``--node-access`` choice, ``{"choice": auto|none|privileged-pod, "offered": bool
    (the cluster gives node access without an opt-in), "declined": bool (``none`` where it was offered: core
    skips for node access are then not excused, conformance/reporting/core_skips.py)}``. ``interrupted``: Ctrl-C
    or SIGTERM stopped the run (its summary then says INTERRUPTED, never PASS or a bare FAIL).
    """

    def stamp(t: float | None) -> str | None:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) if t else None

    nodes = facts.get("nodes", [])
    return {
        "run_id": run_id,
        "started": stamp(started),
        "finished": stamp(finished),
        "cluster": {
            "kind": cluster_kind,
            "k8s_version": facts.get("k8s_version", ""),
            "kubelet_versions": sorted({n["kubelet_version"] for n in nodes}),
            "container_runtime": ", ".join(sorted({n["container_runtime"] for n in nodes})),
            "node_os": ", ".join(sorted({n["os_image"] for n in nodes})),
            "nodes": [n["name"] for n in nodes],
        },
        "driver": driver,
        "profile": profile,
        "feature_gates_mode": feature_gates_mode,
        "feature_gates": facts.get("feature_gates", {}),
        "feature_gate_stages": gate_stages(facts),
        "capabilities": {n: {**c, "declared": n in declared} for n, c in capabilities.as_dict().items()},
        "declared_capabilities": sorted(declared),
        "narrowing": narrowing,
        "expected_nodes": facts.get("expected_nodes"),
        "node_access": node_access,
        "interrupted": interrupted,
        "devices": [{k: d[k] for k in ("node", "pool", "device", "attributes")} for d in facts.get("devices", [])],
    }


def write_json(path: Path, doc: dict) -> None:
    """Write ``doc`` atomically (tmp + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)
