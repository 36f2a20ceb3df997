"""Per-driver NodePrepareResources / NodeUnprepareResources latency as the kubelets measured it, read at the
end of a conformance run into ``<report dir>/kubelet-dra-latency.json`` and one line of ``summary.md``.

Source: kubelet histogram ``dra_grpc_operations_duration_seconds{driver_name, method_name, grpc_status_code}``
(client interceptor of pkg/kubelet/cm/dra/plugin), read through the node proxy (:func:`.kubelet.metrics`).
Quantiles are estimated from the summed buckets of every node the way PromQL's ``histogram_quantile`` does
(linear interpolation inside the bucket; the highest finite bound when the rank falls in ``+Inf``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

from conformance.k8s.prometheus import samples
from conformance.node.kubelet import metrics

FILE = "kubelet-dra-latency.json"
METRIC = "dra_grpc_operations_duration_seconds"
METHODS = ("NodePrepareResources", "NodeUnprepareResources")


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """The ``q`` quantile (0..1) of a cumulative histogram ``{upper bound: count}`` (``math.inf`` for +Inf);
    None when it holds no observation."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    if not total:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le in bounds:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):
                return lower
            inside = count - below
            return lower + (le - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = le, count
    return lower


def bucket_bound(q: float, buckets: dict[float, float]) -> float | None:
    """The upper bound of the bucket holding the ``q`` quantile (the estimate's resolution); None when empty or
    in ``+Inf``."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    le = next((b for b in bounds if total and buckets[b] >= q * total), None)
    return None if le is None or math.isinf(le) else le


def summarize(texts: Iterable[str]) -> dict:
    """``{driver: {method: {"calls", "errors", "p50_s", "p99_s", "p50_at_most_s", "p99_at_most_s"}}}`` from
    kubelet metrics ``texts`` (one per node), buckets summed over nodes and status codes; methods named by their
    last path element; ``*_at_most_s``: upper bound of the quantile's bucket (the estimate's resolution)."""
    buckets: dict[tuple[str, str], dict[float, float]] = {}
    errors: dict[tuple[str, str], float] = {}
    for text in texts:
        for labels, value in samples(text, f"{METRIC}_bucket"):
            method = labels.get("method_name", "").rsplit("/", 1)[-1]
            if method not in METHODS:
                continue
            key = (labels.get("driver_name", ""), method)
            le = float(labels.get("le", "+Inf").replace("+Inf", "inf"))
            buckets.setdefault(key, {})[le] = buckets.get(key, {}).get(le, 0.0) + value
        for labels, value in samples(text, f"{METRIC}_count"):
            method = labels.get("method_name", "").rsplit("/", 1)[-1]
            if method in METHODS and labels.get("grpc_status_code", "OK") != "OK":
                key = (labels.get("driver_name", ""), method)
                errors[key] = errors.get(key, 0.0) + value
    out: dict[str, dict] = {}
    for (driver, method), hist in sorted(buckets.items()):
        p50, p99 = quantile(0.5, hist), quantile(0.99, hist)
        out.setdefault(driver, {})[method] = {
            "calls": int(hist[max(hist)]),
            "errors": int(errors.get((driver, method), 0)),
            "p50_s": None if p50 is None else round(p50, 4),
            "p99_s": None if p99 is None else round(p99, 4),
            "p50_at_most_s": bucket_bound(0.5, hist),
            "p99_at_most_s": bucket_bound(0.99, hist),
        }
    return out


def record(k8s, nodes: list[str], report_dir: Path, progress: Callable[[str], None] = lambda s: None) -> dict:
    """Read every node's kubelet metrics and write ``report_dir/kubelet-dra-latency.json``; returns the
    document. Never raises: an unreadable node is listed under ``unreadable``."""
    texts, unreadable = [], {}
    for node in nodes:
        try:
            texts.append(metrics(k8s, node))
        except Exception as exc:  # noqa: BLE001 - a missing figure must not fail the run
            unreadable[node] = str(exc)[:200]
    doc = {
        "metric": METRIC,
        "estimate": "linear inside the kubelet's histogram buckets, like PromQL histogram_quantile",
        "nodes": list(nodes),
        "unreadable": unreadable,
        "drivers": summarize(texts),
    }
    try:
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        (Path(report_dir) / FILE).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        line = summary_line(report_dir).strip()
        if line:
            progress(line)
    except OSError as exc:
        progress(f"kubelet DRA latency not written: {exc}")
    return doc


def summary_line(report_dir: Path) -> str:
    """The summary.md line for ``report_dir/kubelet-dra-latency.json`` ('' when absent or empty)."""
    try:
        doc = json.loads((Path(report_dir) / FILE).read_text())
    except (OSError, ValueError):
        return ""
    parts = []
    for driver, methods in sorted(doc.get("drivers", {}).items()):
        figures = [
            f"{m} p50 {v['p50_s']} s (<= {v.get('p50_at_most_s')}) / p99 {v['p99_s']} s "
            f"(<= {v.get('p99_at_most_s')}) ({v['calls']} calls"
            + (f", {v['errors']} failed" if v["errors"] else "")
            + ")"
            for m, v in sorted(methods.items())
        ]
        parts.append(f"{driver}: " + "; ".join(figures))
    if not parts:
        return ""
    return f"\nKubelet DRA gRPC latency ({FILE}): " + " | ".join(parts) + "\n"
