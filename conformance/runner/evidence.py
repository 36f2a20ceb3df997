"""Evidence collected when a test fails (reporting.md §4.5): YAML of tracked objects, namespace events,
driver plugin logs, scheduler/kubelet log excerpts, CDI spec files, PodResources dumps.

Returns ``(name, content, mime)`` pieces for the reporting plugin's ``pytest_dra_collect_evidence`` hook.
Every source is best effort: a failing source becomes a short text piece, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml

from conformance.core.handles import ClusterHandle, DriverHandle, HasComponentLogs, NodeAccess
from conformance.k8s.client import K8s
from conformance.k8s.tracker import Tracker
from conformance.k8s.waits.core import event_line

Piece = tuple[str, str, str]
LOG_TAIL = 200  # lines per log excerpt


def _tail(path: Path, lines: int = LOG_TAIL, grep: str = "") -> str:
    text = path.read_text(errors="replace").splitlines()
    if grep:
        hits = [ln for ln in text if grep in ln]
        text = hits or text
    return "\n".join(text[-lines:])


def collect(
    *,
    k8s: K8s | None = None,
    tracker: Tracker | None = None,
    namespace: str | None = None,
    driver: DriverHandle | None = None,
    cluster: ClusterHandle | None = None,
    node_access: NodeAccess | None = None,
) -> list[Piece]:
    """All evidence pieces available from the given handles, in this order: tracked objects; namespace events
    and ResourceClaims (``k8s`` + ``namespace``); driver logs and its ResourceSlices (``driver``, slices also
    need ``k8s``); kubelet/scheduler log excerpts (a ``cluster`` with component logs); per node CDI specs and a
    PodResources dump (``node_access`` + ``cluster``). A source that fails adds ``<name>-unavailable.txt``."""
    pieces: list[Piece] = []
    if tracker is not None:
        _guard(pieces, "objects", lambda: [("objects.yaml", _yaml(tracker.objects()), "text/yaml")])
    if k8s is not None and namespace:
        _guard(pieces, "events", lambda: [("events.txt", _events(k8s, namespace), "text/plain")])
        _guard(
            pieces,
            "claims",
            lambda: [("resourceclaims.yaml", _yaml(k8s.list("ResourceClaim", namespace)), "text/yaml")],
        )
    if driver is not None:
        _guard(pieces, "driver-logs", lambda: _driver_logs(driver))
        if k8s is not None:
            _guard(pieces, "slices", lambda: [("resourceslices.yaml", _slices(k8s, driver), "text/yaml")])
    if isinstance(cluster, HasComponentLogs):
        log_dir = cluster.log_dir
        _guard(pieces, "component-logs", lambda: _component_logs(log_dir, namespace))
    if node_access is not None and cluster is not None:
        for node in [n.name for n in cluster.nodes]:
            _guard(pieces, f"cdi-{node}", lambda node=node: [_cdi_specs(node_access, node)])
            _guard(pieces, f"podresources-{node}", lambda node=node: [_pod_resources(node_access, node)])
    return pieces


def _guard(pieces: list[Piece], name: str, fn: Callable[[], list[Piece]]) -> None:
    """Add ``fn()``'s pieces, or a ``<name>-unavailable.txt`` piece saying why they could not be collected."""
    try:
        pieces.extend(fn())
    except Exception as exc:  # noqa: BLE001 - evidence must never mask the failure
        pieces.append((f"{name}-unavailable.txt", f"{name} could not be collected: {exc}", "text/plain"))


def _yaml(objects: Iterable) -> str:
    """The objects' raw dicts (without managedFields) as a YAML stream."""
    return yaml.safe_dump_all([_strip(o.raw) for o in objects], sort_keys=False)


def _events(k8s: K8s, namespace: str) -> str:
    """The namespace's events, one line each, oldest first."""
    events = sorted(k8s.list("Event", namespace), key=lambda e: e.get("lastTimestamp") or "")
    return "\n".join(event_line(e) for e in events) or "(no events)"


def _driver_logs(driver: DriverHandle) -> list[Piece]:
    """One piece per driver log source."""
    return [(f"driver-log-{src.replace('/', '_')}.txt", text, "text/plain") for src, text in driver.logs().items()]


def _slices(k8s: K8s, driver: DriverHandle) -> str:
    """The driver's ResourceSlices as YAML."""
    return _yaml(k8s.list("ResourceSlice", field_selector=f"spec.driver={driver.name}"))


def _component_logs(log_dir: str | Path, namespace: str | None) -> list[Piece]:
    """Tails of the kubelet and scheduler logs in ``log_dir``, lines naming ``namespace`` when there are any."""
    out = []
    for path in sorted(Path(log_dir).glob("*.log")):
        if any(key in path.name for key in ("kubelet", "scheduler")):
            out.append((f"log-{path.stem}.txt", _tail(path, grep=namespace or ""), "text/plain"))
    return out


def _cdi_specs(node_access: NodeAccess, node: str) -> Piece:
    """The node's CDI spec files, each under a ``# <name>`` header."""
    specs = node_access.cdi_specs(node).items()
    return (
        f"cdi-{node}.txt",
        "\n\n".join(f"# {name}\n{text}" for name, text in specs) or "(no CDI specs)",
        "text/plain",
    )


def _pod_resources(node_access: NodeAccess, node: str) -> Piece:
    """The node's PodResources List response as JSON."""
    return (
        f"podresources-{node}.json",
        json.dumps(node_access.pod_resources(node).list(), indent=2),
        "application/json",
    )


def _strip(raw: dict) -> dict:
    out = dict(raw)
    meta = dict(out.get("metadata", {}))
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out
