"""The report's "DRA plugin call latency" section: NodePrepareResources / NodeUnprepareResources per driver, as
the suite's own calls measured them (:mod:`conformance.node.call_timing`, µs resolution) and as the kubelet
logged its calls (:mod:`conformance.node.kubelet_spans`), with count, failures, p50/p90/p99 and max.

Writes ``dra-latency.json`` (seconds), ``dra-latency.svg`` (one bar per row on a log axis: p50 to p99, ticks at
p90 and max; a file we draw, no plotting library) and returns the summary.md section. The SVG is a global
attachment of the Allure report. Percentiles: :func:`conformance.core.stats.summary` (numpy ``linear``). The
kubelet's histogram view (first bucket 0.1 s) stays in :mod:`conformance.node.kubelet_latency`. Source:
issue 26 §4; k8s.io/kubelet/pkg/apis/dra/v1 ``DRAPlugin``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from xml.sax.saxutils import escape

from conformance.core.stats import summary
from conformance.node import call_timing, kubelet_spans

JSON_FILE, SVG_FILE = "dra-latency.json", "dra-latency.svg"
FIGURES = ("p50", "p90", "p99", "max")


def rows(calls: Iterable[dict], source: str) -> list[dict]:
    """One row per (driver, method, via) of ``calls`` (dicts with ``driver``, ``method``, ``s`` seconds,
    ``ok`` and optionally ``via``), sorted: ``{"source", "driver", "method", "via", "failed", "count", "p50",
    "p90", "p99", "mean", "max"}`` (seconds, 6 decimals). One pass to group, one sort per group."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for c in calls:
        groups.setdefault((c.get("driver", ""), c.get("method", ""), c.get("via", "kubelet")), []).append(c)
    out = []
    for (driver, method, via), group in sorted(groups.items()):
        figures = summary([c["s"] for c in group], digits=6)
        failed = sum(1 for c in group if not c.get("ok", True))
        out.append({"source": source, "driver": driver, "method": method, "via": via, "failed": failed, **figures})
    return out


def build(run_dir: Path) -> dict:
    """``{"unit": "seconds", "rows": [...], "kubelet": {"available", "reason"}}`` from the run directory's
    suite call timings and kubelet spans (either may be missing: no rows of that source; neither: no rows
    and no reason, and no section)."""
    suite = rows(call_timing.load(run_dir), "suite")
    spans = kubelet_spans.load(run_dir)
    kubelet = rows(spans.get("spans", []), "kubelet") if spans else []
    reason = (spans or {}).get("reason") or ("" if spans or not suite else f"not recorded (no {kubelet_spans.FILE})")
    return {"unit": "seconds", "rows": suite + kubelet, "kubelet": {"available": bool(kubelet), "reason": reason}}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.3g}" if seconds < 0.1 else f"{seconds * 1000:.0f}"


def section(doc: dict) -> str:
    """The summary.md section of :func:`build`'s document ('' when there is no row and nothing to explain)."""
    if not doc["rows"] and not doc["kubelet"]["reason"]:
        return ""
    lines = ["", f"## DRA plugin call latency (ms; {JSON_FILE}, plot {SVG_FILE})", ""]
    if doc["rows"]:
        lines += ["| measured by | driver | method | calls | failed | p50 | p90 | p99 | max |", "|" + "---|" * 9]
        for r in doc["rows"]:
            by = "kubelet log" if r["source"] == "kubelet" else f"suite ({r['via']})"
            figures = " | ".join(_ms(r[f]) for f in FIGURES)
            lines.append(f"| {by} | {r['driver']} | {r['method']} | {r['count']} | {r['failed']} | {figures} |")
    else:
        lines.append("No NodePrepareResources/NodeUnprepareResources call was timed in this run.")
    if not doc["kubelet"]["available"]:
        lines += ["", f"Kubelet spans: not available: {doc['kubelet']['reason']}"]
    return "\n".join(lines) + "\n"


def _label(row: dict) -> str:
    by = "kubelet" if row["source"] == "kubelet" else f"suite/{row['via']}"
    return f"{by} {row['driver']} {row['method'].replace('Resources', '')} (n={row['count']})"


def svg(doc: dict) -> str:
    """An SVG plot of the rows: per row a bar from p50 to p99 on a log10 millisecond axis, ticks at p90 and
    max, the figures at the right. Raises ValueError when there is no row."""
    data = [r for r in doc["rows"] if r["count"]]
    if not data:
        raise ValueError("no latency rows to plot")
    low = math.floor(math.log10(max(min(r["p50"] for r in data) * 1000, 1e-3)))
    high = math.ceil(math.log10(max(max(r["max"] for r in data) * 1000, 10 ** (low + 1))))
    labels = [_label(r) for r in data]
    left, width, row_h, right = 16 + round(6.4 * max(len(label) for label in labels)), 420, 28, 260
    height = 50 + row_h * len(data)

    def x(seconds: float) -> float:
        ms = max(seconds * 1000, 10**low)
        return left + width * (math.log10(ms) - low) / (high - low)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + right}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        '<text x="10" y="16" font-size="13">DRA plugin call latency (ms, log scale): bar p50-p99, | p90, x max</text>',
    ]
    for decade in range(low, high + 1):
        gx = x(10**decade / 1000)
        parts.append(f'<line x1="{gx:.1f}" y1="24" x2="{gx:.1f}" y2="{height - 14}" stroke="#ddd"/>')
        parts.append(f'<text x="{gx:.1f}" y="{height - 2}" text-anchor="middle">{10**decade:g}</text>')
    for i, (r, label) in enumerate(zip(data, labels, strict=True)):
        y = 34 + i * row_h
        figures = f"p50 {_ms(r['p50'])} p90 {_ms(r['p90'])} p99 {_ms(r['p99'])} max {_ms(r['max'])} ms"
        color = "#4a7fb5" if r["source"] == "suite" else "#d08a2e"
        parts += [
            f"<g><title>{escape(label)}: {figures}</title>",
            f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{x(r["p50"]):.1f}" y="{y + 3}" width="{max(x(r["p99"]) - x(r["p50"]), 2):.1f}" '
            f'height="12" fill="{color}"/>',
            f'<line x1="{x(r["p90"]):.1f}" y1="{y}" x2="{x(r["p90"]):.1f}" y2="{y + 18}" stroke="#000"/>',
            f'<text x="{x(r["max"]):.1f}" y="{y + 13}" text-anchor="middle">x</text>',
            f'<text x="{left + width + 8}" y="{y + 12}" fill="#555">{figures}</text>',
            "</g>",
        ]
    return "\n".join(parts + ["</svg>"]) + "\n"


def write(run_dir: Path) -> tuple[str, list[str]]:
    """Write ``dra-latency.json`` (and ``dra-latency.svg`` when there are rows) into ``run_dir``; returns the
    summary.md section and the written files to attach to the Allure report. Never raises OSError."""
    doc = build(Path(run_dir))
    written: list[str] = []
    if not doc["rows"] and not doc["kubelet"]["reason"]:
        return "", written
    try:
        (Path(run_dir) / JSON_FILE).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        written.append(JSON_FILE)
        if doc["rows"]:
            (Path(run_dir) / SVG_FILE).write_text(svg(doc), encoding="utf-8")
            written.append(SVG_FILE)
    except OSError:
        pass
    return section(doc), written
