"""Multi-version matrix: merge runs of the suites, one per Kubernetes version, into one report.

The cells are run by the tools' matrix runner (``dra-conformance matrix``, conformance_tools/matrix.py) or by
anyone who runs ``dra-conformance run --k8s-version V --report-dir <matrix dir>/<V>`` per version and writes
``matrix-plan.json``; :func:`merge` writes into the matrix directory:
one ``allure-results/`` holding every cell's results (the Kubernetes version is an Allure parameter and
label, so cells never merge as retries; one Allure environment per version), ``allure-report/``,
``junit.xml`` (one ``<testsuite>`` per version, test names suffixed ``[k8s-V]``), ``matrix.json`` (version x
capability table and verdict) and ``matrix.md``.

Source: reporting.md §4.2 (matrix: Kubernetes version x requirement), §3.1 (separate versions = separate
pytest invocations, merged afterwards).
"""

from __future__ import annotations

import datetime
import json
import pathlib
import re
import shutil

from conformance.core import capabilities as caps
from conformance.core import release_gaps
from conformance.reporting import build, history, html, junit, narrowed, runinfo, summary

SIDE_FILES = {"environment.properties", "executor.json", "categories.json"}
VERSION_RE = re.compile(r"^1\.\d+$")
REASON_CHARS = 90  # a skip or failure reason is cut here in matrix.md (matrix.json keeps it whole)
GATE_EXTRAS = (
    "DynamicResourceAllocation",
    "KubeletPodResourcesDynamicResources",
    "KubeletPodResourcesGet",
    "ResourceHealthStatus",
)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _kubelet_versions(run: dict) -> str:
    """``"v1.35.1, v1.35.1"``: the kubelet versions run.json recorded for a cell, ``?`` when none."""
    return ", ".join(map(str, (run.get("cluster") or {}).get("kubelet_versions") or [])) or "?"


def _cell_summary(cell_dir: pathlib.Path) -> dict | None:
    if not (cell_dir / "allure-results").is_dir():
        return None
    path = cell_dir / "summary.json"  # rebuilt when missing or of another schema version (other verdict rules)
    if not path.is_file() or json.loads(path.read_bytes()).get("schemaVersion") != summary.SCHEMA_VERSION:
        build.generate(cell_dir, html_report=False, link_latest=False)
    return json.loads(path.read_text(encoding="utf-8"))


def _merge_results(matrix_dir: pathlib.Path, versions: list[str]) -> pathlib.Path:
    merged = matrix_dir / "allure-results"
    if merged.exists():
        shutil.rmtree(merged)
    merged.mkdir()
    for version in versions:
        source = matrix_dir / version / "allure-results"
        for path in sorted(source.glob("*")) if source.is_dir() else []:
            if path.is_file() and path.name not in SIDE_FILES:
                shutil.copyfile(path, merged / path.name)
    return merged


def _merge_junit(matrix_dir: pathlib.Path, versions: list[str]) -> None:
    parts = []
    for version in versions:
        source = matrix_dir / version / "junit.xml"
        if source.is_file():
            copy = matrix_dir / f".junit-{version}.xml"
            shutil.copyfile(source, copy)
            run = runinfo.load(matrix_dir / version)
            junit.normalise(copy, f"dra-conformance k8s-{version} {runinfo.driver_name(run)}", f" [k8s-{version}]")
            parts.append((copy, version))
    junit.merge(parts, matrix_dir / "junit.xml")
    for copy, _ in parts:
        copy.unlink()


def capability_gate(name: str) -> str | None:
    """The feature gate a capability depends on (``gate.X`` -> X; driver, allocator and platform capabilities
    through :mod:`conformance.core.capabilities`), None when none."""
    if name.startswith("gate."):
        return name.split(".", 1)[1]
    key = name.split(".", 1)[1] if name.startswith("driver.") else ""
    key = "binding_conditions" if key == "binding_failure" else key
    needs = (
        caps.DRIVER_GATES.get(key)
        or release_gaps.ALLOCATOR_GATES.get(name, (None,))[0]
        or release_gaps.KNOWN_PLATFORM_GAPS.get(name, (None,))[0]
    )
    return needs.split(".", 1)[1] if needs else None


def gate_stage(info: dict | None) -> str:
    """``GA``, ``beta-on``, ``beta-off``, ``beta`` (default unknown), ``alpha``, ``deprecated`` or ``absent``
    for one run.json ``feature_gate_stages`` entry (None: the release does not know the gate)."""
    if not info:
        return "absent"
    stage = str(info.get("stage") or "").upper()
    if stage == "BETA":
        return {True: "beta-on", False: "beta-off"}.get(info.get("default"), "beta")
    return "GA" if stage == "GA" else stage.lower() or "?"


def _gates(versions: list[str], runs: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """DRA-related gate -> version -> {stage, enabled} from each cell's run.json."""
    stages = {v: (runs.get(v) or {}).get("feature_gate_stages") for v in versions}
    names = sorted({g for v in versions for g in stages[v] or {} if g.startswith("DRA") or g in GATE_EXTRAS})
    return {
        gate: {
            v: {
                "stage": gate_stage((stages[v] or {}).get(gate)) if stages[v] else "not-run",
                "enabled": bool(((stages[v] or {}).get(gate) or {}).get("enabled")),
            }
            for v in versions
        }
        for gate in names
    }


def table(
    versions: list[str],
    summaries: dict[str, dict | None],
    cells: dict[str, dict],
    runs: dict[str, dict] | None = None,
) -> dict:
    """The matrix.json content from each version's summary (``None``: the cell produced no results) and run.json
    (``runs``: feature-gate stages per version)."""
    runs = runs or {}
    gates = _gates(versions, runs)
    capabilities: dict[str, dict[str, dict]] = {}
    rows, reasons = [], []
    for version in versions:
        data, cell = summaries.get(version), cells.get(version, {})
        if data is None:
            verdict = "ERROR"
            reasons.append(f"Kubernetes {version}: no results (cell exit code {cell.get('exitCode', '?')})")
        else:
            verdict = data["verdict"]
            reasons += [f"Kubernetes {version}: {r}" for r in data["verdictReasons"]]
            _add_capabilities(capabilities, version, data, gates)
        rows.append(_row(version, verdict, cell, data))
    _fill_untested(capabilities, versions, summaries)
    return {
        "schemaVersion": "1",
        "kind": "matrix",
        "generatedAt": _now(),
        "versions": versions,
        "cells": rows,
        "capabilities": dict(sorted(capabilities.items())),
        "featureGates": gates,
        "verdict": narrowed.verdict(reasons, [row["narrowed"] for row in rows]),
        "verdictReasons": reasons,
    }


def _add_capabilities(capabilities: dict[str, dict[str, dict]], version: str, data: dict, gates: dict) -> None:
    """Record each capability of ``version``'s summary under ``capabilities[name][version]``, with its gate and
    that gate's stage on this version."""
    for cap in data["capabilities"]:
        gate = capability_gate(cap["name"])
        capabilities.setdefault(cap["name"], {})[version] = {
            "status": cap["status"],
            "reasons": (cap.get("coverage") or {}).get("gaps") or cap["reasons"],
            "evidence": cap.get("evidence", ""),
            "declared": cap["declared"],
            "gate": gate,
            "gateStage": gates.get(gate, {}).get(version, {}).get("stage") if gate else None,
        }


def _row(version: str, verdict: str, cell: dict, data: dict | None) -> dict:
    """One ``cells`` row: the version's verdict, its cell's exit code, duration and command, and summary facts."""
    return {
        "version": version,
        "verdict": verdict,
        "verdictLine": (data.get("verdictLine") or verdict) if data else verdict,  # PASS (not qualified: ...)
        "exitCode": cell.get("exitCode"),
        "durationS": cell.get("durationS"),
        "kubernetesVersion": data["environment"]["kubernetesVersion"] if data else None,
        "driver": data["driver"] if data else None,
        "counts": data["counts"] if data else None,
        "command": cell.get("command"),
        "featureGatesMode": data.get("featureGatesMode") if data else None,
        "narrowed": data.get("narrowed") if data else None,  # a narrowed cell qualifies nothing
    }


def _fill_untested(capabilities: dict[str, dict[str, dict]], versions: list[str], summaries: dict) -> None:
    """A capability absent on a version: ``not-run`` where the cell has no results, else ``not-tested``."""
    for by_version in capabilities.values():
        for version in versions:
            by_version.setdefault(
                version,
                {
                    "status": "not-run" if summaries.get(version) is None else "not-tested",
                    "reasons": [],
                    "declared": False,
                },
            )


def _cell(entry: dict) -> str:
    """One capability cell: ``pass``, ``fail``, ``skip: <first reason>`` ..., with the gate's stage."""
    status = entry["status"]
    text = status
    if status not in ("pass", "not-run"):
        why = "".join((entry.get("reasons") or [entry.get("evidence") or ""])[0].splitlines()[:1]) if entry else ""
        if "::" in why and ": " in why.split("::", 1)[1]:  # "<node id>: <reason>": the reason is what differs
            why = why.split("::", 1)[1].split(": ", 1)[1]
        text = f"{status}: {why[:REASON_CHARS]}{'…' if len(why) > REASON_CHARS else ''}" if why else status
    stage = entry.get("gateStage")
    return f"{text} [{entry['gate']}: {stage}]" if stage else text


def _scope_note(data: dict) -> str:
    """For a passing matrix, the cells whose PASS is not a bare one (waivers, mission areas where no test
    executed: conformance/reporting/scope.py), e.g. `` — 1.33: PASS (not qualified: admin_access)``; else ""."""
    if data["verdict"] != narrowed.PASS:
        return ""
    notes = [f"{r['version']}: {r['verdictLine']}" for r in data["cells"] if r.get("verdictLine", "PASS") != "PASS"]
    return f" — {'; '.join(notes)}" if notes else ""


def render(data: dict) -> str:
    """matrix.md: per version the counts, the DRA feature gates' stage, and the version x capability table."""
    versions = data["versions"]
    out = [
        f"# DRA driver qualification matrix: {narrowed.matrix_line(data)}{_scope_note(data)}",
        "",
        "| Kubernetes | Verdict | Gates | Executed | Passed | Failed | Broken | Skipped | Duration (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in data["cells"]:
        c = row["counts"] or {}
        out.append(
            f"| {row['version']} ({row['kubernetesVersion'] or '?'}) | {row.get('verdictLine') or row['verdict']} | "
            f"{row.get('featureGatesMode') or '?'} | "
            f"{c.get('executed', '-')} | {c.get('passed', '-')} | {c.get('failed', '-')} | "
            f"{c.get('broken', '-')} | {c.get('skipped', '-')} | {row['durationS'] or '-'} |"
        )
    gates = data.get("featureGates") or {}
    if gates:
        out += [
            "",
            "Feature gates of each release (kube-apiserver `kubernetes_feature_enabled{stage}`, defaults from its "
            "`--help`); `+` = switched on for the run although off by default, `-` = off in the run:",
            "",
            "| Feature gate | " + " | ".join(versions) + " |",
            "|---|" + "---|" * len(versions),
        ]
        for gate, by_version in gates.items():
            cells = []
            for v in versions:
                cell = by_version[v]
                on_by_default = cell["stage"] in ("GA", "beta-on")
                mark = "+" if cell["enabled"] and not on_by_default and cell["stage"] != "absent" else ""
                mark = "-" if not cell["enabled"] and on_by_default else mark
                cells.append(cell["stage"] + mark)
            out.append(f"| {gate} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Capabilities (pass / fail / skip with its first reason; `[gate: stage]` where a feature gate serves it):",
        "",
        "| Capability | " + " | ".join(versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for name, by_version in data["capabilities"].items():
        out.append(f"| {name} | " + " | ".join(_cell(by_version[v]).replace("|", "\\|") for v in versions) + " |")
    commands = [f"- {row['version']}: `{row['command']}`" for row in data["cells"] if row.get("command")]
    if commands:
        out += ["", "Commands:", "", *commands]
    if data["verdictReasons"]:
        out += ["", "## Why it fails", ""] + [f"- {''.join(r.splitlines()[:1])}" for r in data["verdictReasons"]]
    return "\n".join(out) + "\n"


def merge(matrix_dir: str | pathlib.Path, html_report: bool = True, history_from: pathlib.Path | None = None) -> dict:
    """Merge the cells of ``matrix_dir`` (versions from its plan) into one report; returns matrix.json.
    ``history_from``: the Allure history of earlier nights (CI; :func:`history.prepare`), else the newest sibling's.
    Raises FileNotFoundError without a plan, ValueError on a malformed ``history_from``."""
    matrix_dir = pathlib.Path(matrix_dir).resolve()
    plan_file = matrix_dir / history.MATRIX_MARKER
    if not plan_file.is_file():
        raise FileNotFoundError(f"{matrix_dir}: no {history.MATRIX_MARKER}; not a matrix report directory")
    versions = json.loads(plan_file.read_text(encoding="utf-8"))["versions"]
    cells_file = matrix_dir / "cells.json"
    cells = json.loads(cells_file.read_text(encoding="utf-8")) if cells_file.is_file() else {}
    summaries = {v: _cell_summary(matrix_dir / v) for v in versions}
    runs = {v: runinfo.load(matrix_dir / v) for v in versions}
    data = table(versions, summaries, cells, runs)
    (matrix_dir / "matrix.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (matrix_dir / "matrix.md").write_text(render(data), encoding="utf-8")
    merged = _merge_results(matrix_dir, versions)
    _merge_junit(matrix_dir, versions)
    first = next((matrix_dir / v for v in versions if summaries.get(v)), None)
    html.write_side_files(
        merged,
        runs[first.name] if first else {},
        {
            "run.id": matrix_dir.name,
            "kubernetes.version": ", ".join(f"{v}: {runinfo.k8s_version(runs[v])}" for v in versions),
            "kubelet.versions": "; ".join(f"{v}: {_kubelet_versions(runs[v])}" for v in versions),
        },
    )
    if html_report:
        name = f"DRA qualification matrix: Kubernetes {', '.join(versions)}"
        html.generate(
            matrix_dir, merged, history.prepare(matrix_dir, history_from), name, versions, ["matrix.md", "matrix.json"]
        )
    history.update_latest(matrix_dir)
    return data
