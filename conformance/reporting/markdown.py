"""summary.md: the human-readable page of a run's summary.json (also fit for $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from conformance.reporting import coverage, scope

ICONS = {
    "pass": "PASS",
    "partial": "PARTIAL",
    "fail": "FAIL",
    "skip": "SKIP",
    "not-tested": "not tested",
    "passed": "passed",
    "failed": "FAILED",
    "broken": "BROKEN",
    "skipped": "skipped",
    "unknown": "UNKNOWN",
}


def _cell(text) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")[:300]


# opt-outs of checks that are on by default (core.capabilities.DEFAULT_ON and visibility.names_devices)
WAIVER = scope.WAIVER


def _waived_tests(cap: dict) -> str:
    """What a waiver costs in tests: the skipped ones, or for a waiver that skips none (names_devices: the device
    checks run but prove visibility only) nothing more than its evidence says."""
    return f"; tests skipped: {len(cap['tests'])}" if cap["tests"] else ""


def render(summary: dict, timings: dict | None = None) -> str:
    """Markdown text of a run summary (the dict of :func:`conformance.reporting.summary.build`); with the run's
    ``timings.json`` document, one line of wall times and wait share (:func:`timings_line`)."""
    env = summary["environment"]
    waived = [c for c in summary.get("capabilities") or [] if WAIVER.search(c.get("evidence") or "")]
    cut = summary.get("narrowed")  # a narrowed run is not a qualification of its profile (reporting/narrowed.py)
    out = _head(summary, cut, waived)
    out += [timings_line(timings)] if timings else []
    out += [""]
    if cut:
        out += _narrowed_section(summary, cut)
    if summary["verdictReasons"]:
        out += ["## Why it fails", ""] + [f"- {_cell(r)}" for r in summary["verdictReasons"]] + [""]
        failing = scope.failing(summary)
        out += (["### Failing tests", ""] + [f"- {line}" for line in failing] + [""]) if failing else []
    if waived:  # checks every driver is held to unless its profile opts out (core.capabilities.DEFAULT_ON)
        out += ["## Waived by the driver profile", ""]
        out += [f"- `{c['name']}`: {_cell(c['evidence'])}{_waived_tests(c)}" for c in waived] + [""]
    out += coverage_gaps(summary)
    out += _areas_table(summary) + _capabilities_table(summary) + _tests_table(summary)
    if env["devices"]:
        out += ["", "## Devices", "", "| Node | Pool | Device |", "|---|---|---|"]
        out += [f"| {d['node']} | {d['pool']} | {d['device']} |" for d in env["devices"]]
    out += ["", "Verdict rules: " + "; ".join(summary["verdictRules"]) + ".", ""]
    return "\n".join(out)


def _head(summary: dict, cut: dict | None, waived: list[dict]) -> list[str]:
    """The title (verdict, waiver count) and the run, driver, cluster, profile and test-count lines."""
    env, drv, counts = summary["environment"], summary["driver"], summary["counts"]
    headline = summary.get("verdictLine") or summary["verdict"]
    headline += f" (with {len(waived)} profile waiver(s), below)" if waived else ""
    return [
        f"# DRA driver {'narrowed run' if cut else 'qualification'}: {headline}",
        "",
        *_scope_lines(summary),
        f"- Run: `{summary['reportId']}` ({summary['startedAt'] or '?'} to {summary['finishedAt'] or '?'})",
        f"- Driver: `{drv['name']}` version {drv['version']} (deployed as {drv.get('deploy', '?')})",
        f"- Kubernetes: {env['kubernetesVersion']}; kubelets: {', '.join(env['kubeletVersions']) or '?'}",
        f"- Container runtime: {env['containerRuntime']}; node OS: {env['nodeOS']}; "
        f"cluster: {env['clusterKind']} ({len(env['nodes'])} node(s))",
        f"- Profile: {summary['profile']}; feature gates: {summary['featureGatesMode']}",
        f"- Devices found: {len(env['devices'])}",
        f"- Tests: {counts['total']} ({counts['executed']} executed: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['broken']} broken; {counts['skipped']} skipped)",
    ]


def _scope_lines(summary: dict) -> list[str]:
    """The lines under the headline that say what the PASS covers (conformance/reporting/scope.py): the mission
    areas qualified and not qualified (no test executed), the waivers and the optional features not claimed."""
    out = []
    if summary.get("qualifiedAreas") or summary.get("notQualified"):
        out.append(f"- Mission areas qualified: {', '.join(summary.get('qualifiedAreas') or []) or 'none'}")
    if summary.get("notQualified"):
        out.append(
            f"- **Not qualified** (no test executed: see Capabilities for why): {', '.join(summary['notQualified'])}"
        )
    if summary.get("waived"):
        out.append(f"- **Waived** by the profile (explicit false): {', '.join(summary['waived'])}")
    if summary.get("notClaimed"):
        out.append(f"- **Not claimed** by the driver (not tested): {', '.join(summary['notClaimed'])}")
    for key, title in (("partlyTested", "Partly tested"), ("notTestable", "Not testable on this cluster")):
        out += [f"- **{title}**: {item}" for item in summary.get(key) or []]
    out += [f"- **Not tested** (the profile gives nothing to test it with): {u}" for u in summary.get("untested") or []]
    if (summary.get("clusterFault") or {}).get("unwatched"):  # no failure could be excused as the cluster's
        out.append(f"- **{summary['clusterFault']['unwatched']}**: no failure was attributed to the cluster")
    rows = [(title, names) for title, names in scope.box(summary) if names]
    if rows and "capabilities" in summary:
        out += ["", "| Scope | |", "|---|---|"] + [f"| {t} | {', '.join(n).replace('|', '/')} |" for t, n in rows]
    return out + ([""] if out else [])


def _narrowed_section(summary: dict, cut: dict) -> list[str]:
    """Why a narrowed run is not a qualification: the arguments that narrowed it and how many tests it kept."""
    out = ["## Narrowed run: not a qualification", "", f"- {_cell(summary['qualification']['text'])}"]
    out += [f"- Narrowed by: `{_cell(' '.join(cut['args']) or 'deselection')}`"]
    if cut["selected"] is not None:
        out += [f"- Tests selected: {cut['selected']} of the profile's {cut['collected']} collected"]
    return out + [f"- Qualify profile {summary['profile']} with a run without these arguments.", ""]


def _areas_table(summary: dict) -> list[str]:
    """The mission-area table: status and test counts per area."""
    out = ["## Mission areas", "", "| Area | Status | Tests |", "|---|---|---|"]
    for area in summary.get("missionAreas") or []:
        counts_text = ", ".join(f"{k} {v}" for k, v in sorted(area["counts"].items())) or "-"
        out.append(f"| {area['name']} | {ICONS[area['status']]} | {counts_text} |")
    return out


def _capabilities_table(summary: dict) -> list[str]:
    """The capability table: status, declared, available, test counts and reasons per capability."""
    out = [
        "",
        "## Capabilities",
        "",
        "| Capability | Status | Declared | Available | Tests | Reasons |",
        "|---|---|---|---|---|---|",
    ]
    for cap in summary["capabilities"]:
        avail = {True: "yes", False: "no", None: "?"}[cap["available"]]
        counts_text = ", ".join(f"{k} {v}" for k, v in sorted(cap["counts"].items())) or "-"
        out.append(
            f"| {cap['name']} | {ICONS[cap['status']]} | {'yes' if cap['declared'] else 'no'} | {avail} "
            f"| {counts_text} | {_cell('; '.join(cap['reasons']))} |"
        )
    return out


def _tests_table(summary: dict) -> list[str]:
    """The test table: status, failure class, capabilities, first line of the reason, evidence count."""
    out = [
        "",
        "## Tests",
        "",
        "| Test | Status | Class | Capabilities | Reason | Evidence |",
        "|---|---|---|---|---|---|",
    ]
    for t in summary["tests"]:
        out.append(
            f"| `{_cell(t['id'])}` | {ICONS.get(t['status'], t['status'])} | {t['failureClass'] or ''} "
            f"| {', '.join(t['capabilities'])} | {_cell((t['reason'] or '').splitlines()[0] if t['reason'] else '')} "
            f"| {len(t['evidence'])} file(s) |"
        )
    return out


def coverage_gaps(summary: dict) -> list[str]:
    """The "Coverage gaps" section: each ``partial`` capability (:mod:`conformance.reporting.coverage`), how
    many of its tests ran and which skipped with what reason, and whether it fails the verdict;
    ``[]`` when none."""
    partial = [c for c in summary.get("capabilities") or [] if c["status"] == "partial"]
    if not partial:
        return []
    out = ["## Coverage gaps", "", "Capabilities that passed only in part: these tests skipped for the reason each "]
    out[-1] += "names (nothing fitting in the published devices, or something the profile does not give)."
    out += [""]
    for cap in partial:
        cov = cap["coverage"]
        held = "fails the verdict" if coverage.holds_verdict(cap) else "shown only"
        out.append(
            f"- `{cap['name']}` ({held}): {cov['run']} of {len(cap['tests'])} test(s) ran, {cov['skipped']} skipped:"
        )
        out += [f"  - {_cell(g)}" for g in cov["gaps"]]
    return out + [""]


def timings_line(doc: dict) -> str:
    """One summary.md line from a run's ``timings.json`` (:mod:`conformance.runner.timings`): wall times,
    workers, and the share of the summed test time spent waiting on the cluster versus in the harness."""
    run_wall = f"run {doc['run_wall_s']:.0f}s wall (bring-up {doc['bring_up_s']:.0f}s), " if "run_wall_s" in doc else ""
    return (
        f"- Timings: {run_wall}tests {doc['wall_s']:.0f}s wall on {doc['workers'] or 'no'} xdist worker(s); "
        f"of {doc['test_time_s']:.0f}s test time {doc['wait_share']:.0%} waiting on the cluster, "
        f"{doc['harness_share']:.0%} in the harness, {doc['queued_share']:.0%} queued for locks (timings.json)"
    )
