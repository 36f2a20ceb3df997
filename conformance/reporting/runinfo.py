"""Reading ``<report_dir>/run.json``, the harness's record of the run's environment.

Shape (written by conformance/plugin.py at session start and finish)::

    {"run_id", "started", "finished",
     "cluster": {"kind", "k8s_version", "kubelet_versions", "container_runtime", "node_os", "nodes": [...]},
     "driver": {"name", "version", "profile", "deploy"}, "profile", "feature_gates_mode",
     "feature_gates": {...},
     "capabilities": {name: {"available": bool, "evidence": str, "broken": bool, "declared": bool,
                             "cluster_lacks": bool, "gate_unknown": bool}},
     "declared_capabilities": [name, ...]   # optional: what the driver profile promises or its slices publish
     "devices": [{"node", "pool", "device", "attributes"}],
     "expected_nodes": {"nodes": [...], "source": str, "known": bool},   # where the driver should run
     "node_access": {"choice": str, "offered": bool, "declined": bool}}  # the --node-access choice

Every field is optional here: a missing file or field reads as empty, and reports say "unknown".
"""

from __future__ import annotations

import json
import pathlib

UNKNOWN = "unknown"


def load(report_dir: str | pathlib.Path) -> dict:
    """The parsed run.json of ``report_dir``; ``{}`` when it does not exist.

    Raises ``ValueError`` naming the file when it exists but is not a JSON object.
    """
    path = pathlib.Path(report_dir) / "run.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); the harness writes it, delete it to regenerate") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def k8s_version(run: dict) -> str:
    """The cluster's Kubernetes version (``v1.35.4`` or ``1.35``) or ``unknown``."""
    return str((run.get("cluster") or {}).get("k8s_version") or UNKNOWN)


def k8s_minor(run: dict) -> str:
    """``1.35`` from ``v1.35.4`` (or the raw value when it does not look like a version)."""
    raw = k8s_version(run).lstrip("v")
    parts = raw.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0].isdigit() else raw


def driver_name(run: dict) -> str:
    """The driver's name (the ``driver`` field of its ResourceSlices) or ``unknown``."""
    return str((run.get("driver") or {}).get("name") or UNKNOWN)


def driver_version(run: dict) -> str:
    """The driver's version or ``unknown``."""
    return str((run.get("driver") or {}).get("version") or UNKNOWN)


def profile(run: dict) -> str:
    """The run's profile (core/standard/full/disruptive) or ``unknown``."""
    return str(run.get("profile") or (run.get("driver") or {}).get("profile") or UNKNOWN)


def gates_mode(run: dict) -> str:
    """The feature-gate mode of the cluster (e.g. ``all``, ``default``) or ``unknown``."""
    return str(run.get("feature_gates_mode") or UNKNOWN)


def environment_properties(run: dict) -> dict[str, str]:
    """Flat ``key -> value`` pairs for Allure's ``environment.properties``."""
    cluster = run.get("cluster") or {}
    devices = run.get("devices") or []
    props = {
        "run.id": str(run.get("run_id") or UNKNOWN),
        "kubernetes.version": k8s_version(run),
        "kubelet.versions": ", ".join(map(str, cluster.get("kubelet_versions") or [])) or UNKNOWN,
        "cluster.kind": str(cluster.get("kind") or UNKNOWN),
        "container.runtime": str(cluster.get("container_runtime") or UNKNOWN),
        "node.os": str(cluster.get("node_os") or UNKNOWN),
        "nodes": str(len(cluster.get("nodes") or [])),
        "driver.name": driver_name(run),
        "driver.version": driver_version(run),
        "driver.deploy": str((run.get("driver") or {}).get("deploy") or UNKNOWN),
        "profile": profile(run),
        "feature_gates.mode": gates_mode(run),
        "devices": str(len(devices)),
    }
    for gate, value in sorted((run.get("feature_gates") or {}).items()):
        props[f"gate.{gate}"] = str(value)
    return props
