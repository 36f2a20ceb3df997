"""The benchmark's report in ``reports/bench/<id>/``: ``bench.json`` (schema ``dra-tools/conformance_tools/bench/v1``),
PNG plots (matplotlib, Agg), ``summary.md`` and an Allure report (one result per workload with its figures,
the JSON and the plots attached; ``allure-report/`` via the pinned Allure CLI).

Upstream comparison (:data:`UPSTREAM`): kubernetes test/integration/scheduler_perf/dra (in-process
kube-apiserver, kube-scheduler and resourceclaim controller, no kubelets, no client-side throttling): figures a
DRA maintainer posted from local benchstat runs (GOMAXPROCS 6) and the CI job's threshold.
"""

from __future__ import annotations

import json
import os
import platform
import time
import uuid
from pathlib import Path

from conformance_tools.bench.config import CLASSIC

SCHEMA = "dra-tools/conformance_tools/bench/v1"
UPSTREAM = {
    "harness": "kubernetes test/integration/scheduler_perf/dra: in-process kube-apiserver + kube-scheduler + "
    "resourceclaim controller, fake nodes, no kubelets, no client-side throttling",
    "figures": [
        {
            "workload": "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
            "ours": "template",
            "pods_per_s": 254.8,
            "cpus": 6,
            "source": "kubernetes/kubernetes PR #138916, benchstat by pohly (GOMAXPROCS 6; 380.6 with that PR)",
        },
        {
            "workload": "SchedulingWithResourceClaimTemplate/selector_empty_500nodes",
            "ours": "cel",
            "pods_per_s": 243.0,
            "cpus": 6,
            "source": "kubernetes/kubernetes PR #138916 (same run)",
        },
        {
            "workload": "SchedulingWithResourceClaimTemplate/match_empty_500nodes",
            "ours": "match-attribute",
            "pods_per_s": 121.0,
            "cpus": 6,
            "source": "kubernetes/kubernetes PR #138916 (same run)",
        },
        {
            "workload": "SchedulingWithResourceClaimTemplate/5000pods_500nodes, CI threshold (typically above 51)",
            "ours": "template",
            "pods_per_s": 40,
            "cpus": None,
            "source": "performance-config.yaml at commit 03312ae5588ff4027cd0145223343faf91959c1d, perf-dash job "
            "ci-benchmark-scheduler-perf",
        },
    ],
}


def machine() -> dict:
    """Where the benchmark ran: CPU count and model, memory (GiB), kernel."""
    model, mem = "", 0.0
    try:
        model = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if "model name" in ln
            ),
            "",
        )
        kb = next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
        mem = round(int(kb) / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_gib": mem, "kernel": platform.release()}


def ratios(results: list[dict]) -> list[dict]:
    """Per fleet size with both a ``template`` and a ``classic`` result: DRA/classic throughput and p50/p99
    time-to-bound ratios."""
    out = []
    for nodes in sorted({r["nodes"] for r in results}):
        by = {r["variant"]: r for r in results if r["nodes"] == nodes}
        dra, classic = by.get("template"), by.get(CLASSIC)
        if not dra or not classic or not classic["throughput_pods_per_s"]:
            continue
        row = {"nodes": nodes, "throughput": round(dra["throughput_pods_per_s"] / classic["throughput_pods_per_s"], 3)}
        for q in ("p50", "p99"):
            a, b = dra["latency_s"]["pod_bound"][q], classic["latency_s"]["pod_bound"][q]
            row[f"bound_{q}"] = round(a / b, 3) if a is not None and b else None
        out.append(row)
    return out


def build(bench_id: str, cfg: dict, cluster: dict, results: list[dict], started: float, finished: float) -> dict:
    """The bench.json document."""
    return {
        "schema": SCHEMA,
        "id": bench_id,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(finished - started, 1),
        "machine": machine(),
        "cluster": cluster,
        "config": cfg,
        "results": results,
        "dra_over_classic": ratios(results),
        "upstream": UPSTREAM,
    }


def _save(fig, png: Path) -> None:
    """Write ``fig`` as ``png`` and beside it as SVG (same name, ``.svg``: text, diffable)."""
    fig.savefig(png, dpi=100)
    fig.savefig(png.with_suffix(".svg"))


def plot(data: dict, out: Path) -> list[Path]:
    """Write ``variants.png`` (throughput and time-to-bound percentiles per workload at the main fleet size) and
    ``scale.png`` (throughput and p50/p99 time-to-bound against fleet size), each also as ``.svg``; returns the
    PNG files written."""
    import matplotlib  # noqa: PLC0415 - heavy; only when a report is written

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    results, main = data["results"], data["config"]["nodes"]
    written = []
    at_main = [r for r in results if r["nodes"] == main]
    if at_main:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        names = [r["variant"] for r in at_main]
        ax1.bar(names, [r["throughput_pods_per_s"] for r in at_main], color="tab:blue")
        ref = UPSTREAM["figures"][0]
        ax1.axhline(ref["pods_per_s"], color="tab:red", ls="--", label=f"upstream 500 nodes, {ref['cpus']} CPUs")
        ax1.set_ylabel("pods/s")
        ax1.set_title(f"Scheduling throughput, {main} fake nodes")
        ax1.legend()
        width = 0.27
        for k, q in enumerate(("p50", "p90", "p99")):
            xs = [i + (k - 1) * width for i in range(len(at_main))]
            ax2.bar(xs, [r["latency_s"]["pod_bound"][q] or 0 for r in at_main], width, label=q)
        ax2.set_xticks(range(len(at_main)), names)
        ax2.set_ylabel("seconds, creation -> bound")
        ax2.set_title("Time to bound")
        ax2.legend()
        for ax in (ax1, ax2):
            ax.tick_params(axis="x", rotation=20)
        fig.suptitle(f"dra-conformance bench {data['id']} on {data['machine']['cpus']} CPUs")
        fig.tight_layout()
        written.append(out / "variants.png")
        _save(fig, written[-1])
        plt.close(fig)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for variant in ("template", CLASSIC):
        rows = sorted((r for r in results if r["variant"] == variant), key=lambda r: r["nodes"])
        if not rows:
            continue
        xs = [r["nodes"] for r in rows]
        ax1.plot(xs, [r["throughput_pods_per_s"] for r in rows], marker="o", label=variant)
        for q, ls in (("p50", "-"), ("p99", ":")):
            ax2.plot(xs, [r["latency_s"]["pod_bound"][q] or 0 for r in rows], marker="o", ls=ls, label=f"{variant} {q}")
    if len(xs_all := sorted({r["nodes"] for r in results})) > 1 and xs_all[-1] >= 10 * xs_all[0]:
        for ax in (ax1, ax2):
            ax.set_xscale("log")
    ax1.set_xlabel("fake nodes")
    ax1.set_ylabel("pods/s")
    ax1.set_title("Throughput vs fleet size")
    ax1.legend()
    ax2.set_xlabel("fake nodes")
    ax2.set_ylabel("seconds, creation -> bound")
    ax2.set_title("Time to bound vs fleet size")
    ax2.legend()
    fig.tight_layout()
    written.append(out / "scale.png")
    _save(fig, written[-1])
    plt.close(fig)
    return written


def _fmt(v) -> str:
    return "-" if v is None else f"{v:g}"


def markdown(data: dict, plots: list[Path]) -> str:
    """summary.md: the results table, the DRA/classic ratios, the upstream figures and the machine."""
    m, up, mirrored = data["machine"], data["upstream"], data["cluster"].get("mirror")
    per_node = f"{mirrored['devices_per_node']} mirrored" if mirrored else data["config"]["devices"]
    lines = [
        f"# DRA scheduling benchmark {data['id']}",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model'] or 'unknown model'}), {m['memory_gib']} GiB, "
        f"kernel {m['kernel']}; "
        f"Kubernetes {data['cluster'].get('kubernetes', '?')} (gates: {data['cluster'].get('feature_gates', '?')}), "
        f"local cluster + kwok fake nodes; {per_node} devices per node; scheduler and controller-"
        f"manager client QPS {data['cluster'].get('client_qps', '?')}; wall {data['wall_s']} s.",
        "",
        "| nodes | workload | pods | bound | pods/s | alloc p50 | alloc p90 | alloc p99 | bound p50 | bound p90 "
        "| bound p99 | create s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in data["results"]:
        a, b = r["latency_s"]["claim_allocated"] or {}, r["latency_s"]["pod_bound"]
        lines.append(
            f"| {r['nodes']} | {r['variant']} | {r['pods']} | {r['bound']} | {r['throughput_pods_per_s']:g} | "
            f"{_fmt(a.get('p50'))} | {_fmt(a.get('p90'))} | {_fmt(a.get('p99'))} | {_fmt(b['p50'])} | "
            f"{_fmt(b['p90'])} | {_fmt(b['p99'])} | {r['create_s']:g} |"
        )
    lines += [
        "",
        "Latencies in seconds from the pod's create request to the watch event showing its claim allocated "
        "(shared: the group's claim; 0 when it was allocated before the pod existed) and the pod bound.",
        "",
    ]
    if mirrored:  # bench --mirror: the fleet carries a driver's own slice layout (bench/mirror.py)
        lines[3:3] = [
            "",
            f"Mirrored device model: {mirrored['driver']} as published on node {mirrored['source_node']}: "
            f"{mirrored['slices_per_node']} slice(s), {mirrored['devices_per_node']} device(s), "
            f"{mirrored['counter_sets_per_node']} counter set(s) per node (partitioned: {mirrored['partitioned']}); "
            f"pods sized to {mirrored['units_per_node']} device(s) at once per node, the classic extended "
            "resource likewise.",
            *(
                f"- not run for this model: **{name}**: {why}"
                for name, why in sorted((mirrored.get("not_run") or {}).items())
            ),
        ]
    if data.get("interrupted"):
        lines[1:1] = ["", "**Interrupted (Ctrl-C): partial results.**"]
    if data.get("cut_short"):
        lines[1:1] = ["", "**Cut short by an error (see the bench's output): partial results.**"]
    if data["dra_over_classic"]:
        lines += ["## DRA / classic extended resource", "", "| nodes | throughput | bound p50 | bound p99 |"]
        lines += ["| --- | --- | --- | --- |"]
        for row in data["dra_over_classic"]:
            lines.append(
                f"| {row['nodes']} | {row['throughput']:g} | {_fmt(row['bound_p50'])} | {_fmt(row['bound_p99'])} |"
            )
        lines.append("")
    lines += [
        "## Upstream scheduler_perf",
        "",
        f"{up['harness']}. Ours: {m['cpus']} CPUs shared by etcd, kube-apiserver, scheduler, controller manager, "
        "kwok, the fleet process and this harness, everything through real API round trips.",
        "",
        "| upstream workload | pods/s | CPUs | our workload | ours pods/s (largest fleet) | source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for fig in up["figures"]:
        mine = [r for r in data["results"] if r["variant"] == fig["ours"]]
        best = max(mine, key=lambda r: r["nodes"]) if mine else None
        ours = f"{best['throughput_pods_per_s']:g} ({best['nodes']} nodes)" if best else "-"
        lines.append(
            f"| {fig['workload']} | {fig['pods_per_s']:g} | {fig['cpus'] or '?'} | {fig['ours']} | {ours} | "
            f"{fig['source']} |"
        )
    lines += [
        "",
        "## Files",
        "",
        "- bench.json",
    ]
    lines += [f"- ![{p.stem}]({p.name})" for p in plots]
    lines.append("- allure-report/index.html")
    return "\n".join(lines) + "\n"


def allure_results(data: dict, out: Path, plots: list[Path]) -> Path:
    """One Allure result per workload (figures as parameters, plots and bench.json attached); returns the
    results folder."""
    from allure_commons.logger import AllureFileLogger  # noqa: PLC0415
    from allure_commons.model2 import Attachment, Label, Parameter, StatusDetails, TestResult  # noqa: PLC0415

    folder = out / "allure-results"
    folder.mkdir(parents=True, exist_ok=True)
    logger = AllureFileLogger(str(folder), clean=True)
    attachments = []
    for path, mime in [(out / "bench.json", "application/json"), *((p, "image/png") for p in plots)]:
        source = f"{uuid.uuid4()}-attachment{path.suffix}"
        (folder / source).write_bytes(path.read_bytes())
        attachments.append(Attachment(name=path.name, source=source, type=mime))
    now = int(time.time() * 1000)
    for r in data["results"]:
        b = r["latency_s"]["pod_bound"]
        name = f"{r['variant']} @ {r['nodes']} nodes"
        ok = r["bound"] == r["pods"]
        params = {"pods/s": r["throughput_pods_per_s"], "pods": r["pods"], "bound": r["bound"]}
        params.update({f"bound {q}": b[q] for q in ("p50", "p90", "p99")})
        result = TestResult(
            uuid=str(uuid.uuid4()),
            historyId=f"bench/{r['variant']}/{r['nodes']}",
            name=name,
            fullName=f"bench::{name}",
            status="passed" if ok else "failed",
            statusDetails=None
            if ok
            else StatusDetails(message=f"{r['pods'] - r['bound']} pod(s) not bound: {r['pending']}"),
            start=now,
            stop=now + int(r["wall_s"] * 1000),
            labels=[
                Label("parentSuite", "bench"),
                Label("suite", f"{r['nodes']} nodes"),
                Label("subSuite", r["variant"]),
            ],
            parameters=[Parameter(name=k, value=str(v)) for k, v in params.items()],
            attachments=list(attachments),
        )
        logger.report_result(result)
    return folder


def write(out: Path, data: dict, html: bool = True) -> dict:
    """Write bench.json, the plots, summary.md and (``html``) the Allure HTML into ``out``; returns
    ``{name: path}`` of what was written. Raises conformance.reporting.html.ReportError when the Allure CLI
    fails (the other files are written first)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    plots = plot(data, out)
    (out / "summary.md").write_text(markdown(data, plots), encoding="utf-8")
    written = {"bench.json": out / "bench.json", "summary.md": out / "summary.md", **{p.name: p for p in plots}}
    results = allure_results(data, out, plots)
    written["allure-results"] = results
    if html:
        from conformance.reporting import html as allure_html  # noqa: PLC0415

        history = out / "history.jsonl"
        history.touch()
        allure_html.generate(
            out, results, history, f"DRA scheduling benchmark {data['id']}", [], ["summary.md", "bench.json"]
        )
        written["allure-report"] = out / "allure-report"
    return written
