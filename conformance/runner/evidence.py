"""Evidence collected when a test fails (reporting.md §4.5): YAML of tracked objects, namespace events,
driver plugin logs, scheduler/kubelet log excerpts, CDI spec files, PodResources dumps.

Returns ``(name, content, mime)`` pieces for the reporting plugin's ``pytest_dra_collect_evidence`` hook.
Every source is best effort: a failing source becomes a short text piece, never an exception.
"""

from __future__ import annotations

import json
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
    """All evidence pieces available from the given handles."""
    pieces: list[Piece] = []

    def guard(name: str, fn) -> None:
        try:
            pieces.extend(fn())
        except Exception as exc:  # noqa: BLE001 - evidence must never mask the failure
            pieces.append((f"{name}-unavailable.txt", f"{name} could not be collected: {exc}", "text/plain"))

    if tracker is not None:
        guard(
            "objects",
            lambda: [
                (
                    "objects.yaml",
                    yaml.safe_dump_all([_strip(o.raw) for o in tracker.objects()], sort_keys=False),
                    "text/yaml",
                )
            ],
        )
    if k8s is not None and namespace:
        guard(
            "events",
            lambda: [
                (
                    "events.txt",
                    "\n".join(
                        event_line(e)
                        for e in sorted(k8s.list("Event", namespace), key=lambda e: e.get("lastTimestamp") or "")
                    )
                    or "(no events)",
                    "text/plain",
                )
            ],
        )
        guard(
            "claims",
            lambda: [
                (
                    "resourceclaims.yaml",
                    yaml.safe_dump_all([_strip(o.raw) for o in k8s.list("ResourceClaim", namespace)], sort_keys=False),
                    "text/yaml",
                )
            ],
        )
    if driver is not None:
        guard(
            "driver-logs",
            lambda: [
                (f"driver-log-{src.replace('/', '_')}.txt", text, "text/plain") for src, text in driver.logs().items()
            ],
        )
        if k8s is not None:
            guard(
                "slices",
                lambda: [
                    (
                        "resourceslices.yaml",
                        yaml.safe_dump_all(
                            [
                                _strip(o.raw)
                                for o in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver.name}")
                            ],
                            sort_keys=False,
                        ),
                        "text/yaml",
                    )
                ],
            )
    if isinstance(cluster, HasComponentLogs):
        log_dir = cluster.log_dir

        def component_logs() -> list[Piece]:
            out = []
            for path in sorted(Path(log_dir).glob("*.log")):
                if any(key in path.name for key in ("kubelet", "scheduler")):
                    out.append((f"log-{path.stem}.txt", _tail(path, grep=namespace or ""), "text/plain"))
            return out

        guard("component-logs", component_logs)
    if node_access is not None and cluster is not None:
        for node in [n.name for n in cluster.nodes]:
            guard(
                f"cdi-{node}",
                lambda node=node: [
                    (
                        f"cdi-{node}.txt",
                        "\n\n".join(f"# {name}\n{text}" for name, text in node_access.cdi_specs(node).items())
                        or "(no CDI specs)",
                        "text/plain",
                    )
                ],
            )
            guard(
                f"podresources-{node}",
                lambda node=node: [
                    (
                        f"podresources-{node}.json",
                        json.dumps(node_access.pod_resources(node).list(), indent=2),
                        "application/json",
                    )
                ],
            )
    return pieces


def _strip(raw: dict) -> dict:
    out = dict(raw)
    meta = dict(out.get("metadata", {}))
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out
