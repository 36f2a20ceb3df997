"""summary.json: the machine-readable qualification summary of one run, and its fail-closed verdict.

The shape is fixed by ``summary.schema.json`` (schemaVersion 2, validated with jsonschema before writing; 2
added ``narrowed``, ``qualification`` and the ``NARROWED-PASS`` verdict: conformance/reporting/narrowed.py).
Verdict rules (reporting.md §0.4 and §4.3; kubernetes#124950 "zero tests passed"):

1. any failed or broken test -> FAIL;
2. any declared capability failing, unavailable or never executed -> FAIL (declared: listed in run.json
   ``declared_capabilities``, or a ``capabilities`` entry with ``"declared": true`` or ``"broken": true``,
   i.e. declared by the driver profile but not delivered); except a capability whose feature the cluster does
   not serve (``"cluster_lacks": true``: its gate is off), whose tests skip with that evidence: it is shown as
   ``skip`` with ``clusterLacks`` and does not fail the driver (issue 13: 1.34 default gates); a declared
   ``driver.*`` capability that is ``partial`` (some tests passed, others skipped because the driver's inventory
   offered nothing fitting: :mod:`conformance.reporting.coverage`) fails too; other capabilities only show it;
3. zero executed tests -> FAIL;
4. a skipped test without a reason, or a result with an unknown status -> FAIL;
otherwise PASS; ``NARROWED-PASS`` (exit code 0, not a qualification of the profile) when the run was narrowed
(``-k``, ``-m``, paths... recorded in run.json ``narrowing``). A PASS names its waivers and the mission areas in
which no test executed (``verdictLine`` ``PASS (not qualified: admin_access)``, ``qualifiedAreas``,
``notQualified``, ``waived``, ``notClaimed``: conformance/reporting/scope.py, issue 24 §1).
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import pathlib

import jsonschema

from conformance import shipped
from conformance.core import markers, portable
from conformance.reporting import (
    core_skips,
    coverage,
    evidence,
    interrupt,
    labels,
    manifest,
    narrowed,
    qualifiers,
    results,
    runinfo,
    scope,
)
from conformance.reporting.cluster_fault import section as cluster_section
from conformance.reporting.coverage import skipped_for_another as _skipped_for_another

SCHEMA_PATH = pathlib.Path(__file__).with_name("summary.schema.json")
SCHEMA_VERSION = "3"
RULES = (
    "no failed or broken test",
    "every declared capability passes (available, executed, no failure) unless the cluster does not serve it",
    "no declared driver capability is partial (a test of it skipped for want of a fitting device)",
    "at least one executed test",
    "every skip has a reason; no result with an unknown status",
    "no core test skipped (the KEP-5970 minimum behaviours run on every driver)",
)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The run's verdict: ``passed`` (bool), ``reasons`` (why it failed; empty when passed),
    ``summary_path`` (the summary.json written), ``narrowed`` (the run selected a subset of its profile's
    tests: not a qualification of the profile)."""

    passed: bool
    reasons: tuple[str, ...]
    summary_path: pathlib.Path | None = None
    narrowed: bool = False
    line: str = ""  # summary.json verdictLine: PASS (waived: ...; not qualified: ...) (conformance/reporting/scope.py)

    @property
    def text(self) -> str:
        """``PASS``, ``NARROWED-PASS`` or ``FAIL``."""
        return "FAIL" if not self.passed else narrowed.NARROWED_PASS if self.narrowed else "PASS"

    @property
    def exit_code(self) -> int:
        """0 for PASS, 1 for FAIL."""
        return 0 if self.passed else 1


def schema() -> dict:
    """The parsed summary JSON schema."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(data: dict) -> None:
    """Raise ``jsonschema.ValidationError`` when ``data`` does not follow the summary schema."""
    jsonschema.validate(data, schema(), format_checker=jsonschema.FormatChecker())


def tool_version() -> str:
    """The installed dra-conformance version (``unknown`` when not installed)."""
    try:
        return importlib.metadata.version("dra-conformance")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _test_entry(rec: results.TestRecord, run_dir: pathlib.Path) -> dict:
    nodeid = rec.label("nodeid") or rec.full_name
    folder = run_dir / "evidence" / evidence.test_id(nodeid)
    files = sorted(str(p.relative_to(run_dir)) for p in folder.glob("*")) if folder.is_dir() else []
    reason = rec.message if rec.status in ("failed", "broken", "skipped") else None
    return {
        "id": nodeid,
        "name": rec.name,
        "fullName": rec.full_name,
        "status": rec.status,
        "failureClass": rec.failure_class,
        "capabilities": sorted(rec.labels.get("feature") or [labels.NO_CAPABILITY]),
        "areas": sorted(rec.labels.get("epic") or []),
        "scenarios": sorted(rec.labels.get("story") or []),
        "severity": rec.label("severity", "normal"),
        "reason": reason,
        "durationS": round(rec.duration_s, 3),
        "retries": rec.retries,
        "evidence": files,
    }


_first_line = coverage.first_line


def _status(counts: dict[str, int]) -> str:
    """pass / fail / skip / not-tested of a group of tests from its ``{status: n}`` counts (a capability's
    ``pass`` may then become ``partial``: :func:`conformance.reporting.coverage.mark`)."""
    if counts.get("failed") or counts.get("broken") or counts.get("unknown"):
        return "fail"
    if counts.get("passed"):
        return "pass"
    return "skip" if counts else "not-tested"


def mission_areas(tests: list[dict]) -> list[dict]:
    """One entry per mission area (:data:`conformance.core.markers.MISSION_AREAS`, in that order):
    ``{name, status (pass|fail|skip|not-tested), counts {status: n}, tests (n)}`` over the tests whose
    ``areas`` name it; an area no test of the run belongs to is ``not-tested``."""
    out = []
    for area in markers.MISSION_AREAS:
        mine = [t for t in tests if area in t["areas"]]
        counts: dict[str, int] = {}
        for t in mine:
            counts[t["status"]] = counts.get(t["status"], 0) + 1
        out.append({"name": area, "status": _status(counts), "counts": counts, "tests": len(mine)})
    return out


def _capabilities(tests: list[dict], run: dict) -> list[dict]:
    known = run.get("capabilities") or {}
    declared = set(run.get("declared_capabilities") or [])
    declared |= {n for n, i in known.items() if isinstance(i, dict) and (i.get("declared") or i.get("broken"))}
    names = sorted({c for t in tests for c in t["capabilities"]} | set(known) | declared)
    out = []
    for name in names:
        mine = [t for t in tests if name in t["capabilities"]]
        counts: dict[str, int] = {}
        for t in mine:
            counts[t["status"]] = counts.get(t["status"], 0) + 1
        info = known.get(name) or {}
        available = info.get("available") if isinstance(info.get("available"), bool) else None
        bad = [t for t in mine if t["status"] in ("failed", "broken", "unknown")]  # a failure hides skips beside it
        reasons = sorted(
            {
                f"{t['id']}: {_first_line(t['reason']) or 'no reason given'}"
                for t in bad or mine
                if t["status"] in ("failed", "broken", "skipped", "unknown")
            }
        )
        status = _status(counts)
        lacks = bool(info.get("cluster_lacks")) and not info.get("broken")
        if name in declared and lacks and status in ("skip", "not-tested"):
            reasons.insert(
                0, f"declared by the driver profile; the cluster does not serve it: {info.get('evidence', '')}"
            )
            status = "skip"
        elif name in declared and (available is False or info.get("broken")):
            reasons.insert(0, f"declared by the driver profile but not available: {info.get('evidence', '')}")
            status = "fail"
        if status == "skip" and not reasons:
            reasons = ["skipped without a reason"]
        entry = {
            "name": name,
            "status": status,
            "declared": name in declared,
            "clusterLacks": lacks,
            "available": available,
            "evidence": str(info.get("evidence") or ""),
            "counts": counts,
            "reasons": reasons,
            "tests": [t["id"] for t in mine],
        }
        out.append(coverage.mark(entry, mine, known))
    return out


def verdict_reasons(counts: dict, capabilities: list[dict], tests: list[dict]) -> list[str]:
    """The reasons the run fails (empty list: PASS). Inputs are the summary's own sections."""
    reasons = []
    bad = [t for t in tests if t["status"] in ("failed", "broken")]
    if bad:
        reasons.append(f"{len(bad)} test(s) failed or broken: " + ", ".join(t["id"] for t in bad[:10]))
    by_id = {t["id"]: t for t in tests}
    for cap in capabilities:
        if cap["status"] == "skip" and all(_skipped_for_another(by_id.get(i), cap["name"]) for i in cap["tests"]):
            continue  # its tests skipped because of another capability (shown there), not this one
        if cap["status"] == "partial":
            reasons += [coverage.verdict_reason(cap)] if coverage.holds_verdict(cap) else []
            continue
        if cap["declared"] and cap["status"] != "pass" and not (cap.get("clusterLacks") and cap["status"] == "skip"):
            reasons.append(
                f"declared capability {cap['name']} is {cap['status']}: "
                + ("; ".join(cap["reasons"]) or "no test executed it")
            )
    if counts["executed"] == 0:
        reasons.append("zero tests executed (everything skipped or deselected)")
    unexplained = [t["id"] for t in tests if t["status"] == "skipped" and not (t["reason"] or "").strip()]
    if unexplained:
        reasons.append("skipped without a reason: " + ", ".join(unexplained[:10]))
    if counts["unknown"]:
        reasons.append(f"{counts['unknown']} result(s) with an unknown status (interrupted run?)")
    return reasons


def build(run_dir: str | pathlib.Path, allure_dir: str | pathlib.Path | None = None) -> dict:
    """The summary of ``run_dir`` (its run.json, and the Allure results of ``allure_dir``, by default
    ``run_dir/allure-results``: a plain pytest ``--alluredir`` elsewhere), validated against the schema."""
    root = pathlib.Path(run_dir)
    run = runinfo.load(root)
    records = results.load(pathlib.Path(allure_dir) if allure_dir else root / "allure-results")
    fault = cluster_section(records, root)  # failures the cluster explains: broken, infrastructure
    tests = interrupt.settle([_test_entry(r, root) for r in records], records, bool(run.get("interrupted")))
    counts = _counts(tests, records)
    capabilities = _capabilities(tests, run)
    declined = bool((run.get("node_access") or {}).get("declined"))  # --node-access none where it was offered
    missing = manifest.missing(runinfo.profile(run), [t["id"] for t in tests])
    reasons = verdict_reasons(counts, capabilities, tests) + core_skips.unexcused(records, capabilities, declined)
    reasons += narrowed.dropped_reasons(run, missing)  # nothing on the command line narrowed it: FAIL, exit 1
    interrupted = _interrupted(run, counts)
    reasons = [interrupted, *reasons] if interrupted else reasons
    narrowing = narrowed.from_run(run, missing)
    verdict = narrowed.verdict(reasons, narrowing)
    areas = mission_areas(tests)
    data = {
        "schemaVersion": SCHEMA_VERSION,
        "kind": "run",
        "reportId": str(run.get("run_id") or root.name),
        "tool": {"name": "dra-conformance", "version": tool_version()},
        "generatedAt": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "startedAt": run.get("started"),
        "finishedAt": run.get("finished"),
        "profile": runinfo.profile(run),
        "featureGatesMode": runinfo.gates_mode(run),
        "environment": _environment(run),
        "driver": _driver_entry(run),
        "counts": counts,
        "capabilities": capabilities,
        "missionAreas": areas,
        "tests": tests,
        "verdict": verdict,
        "verdictReasons": reasons,
        "verdictRules": list(RULES),
        "narrowed": narrowing,
        "qualification": narrowed.qualification(verdict, runinfo.profile(run), narrowing),
        **scope.fields(capabilities, areas),
        "coreNotRun": core_skips.excused(records, capabilities, declined),
        "clusterFault": fault,
    }
    data.update(qualifiers.fields(capabilities, tests, data["notClaimed"], data["waived"]))  # breaker s15 C6/7/9
    data["verdictLine"] = (
        f"INTERRUPTED — {interrupted}" if interrupted else (fault or {}).get("line") or scope.verdict_line(data)
    )
    if data["notQualified"] and data["qualification"]["qualified"]:
        data["qualification"]["text"] += f"; not qualified: {', '.join(data['notQualified'])} (no test executed)"
    validate(data)
    return data


def _interrupted(run: dict, counts: dict) -> str:
    """The reason a run stopped by Ctrl-C or SIGTERM (run.json ``interrupted``, written by the plugin at session
    finish) is no verdict on the driver, ``""`` for a run that was not: the summary then says FAIL with this
    reason first and ``verdictLine`` ``INTERRUPTED — ...`` as the terminal's VERDICT line (breaker s14 B10: it
    said "FAIL: zero tests executed")."""
    if not run.get("interrupted"):
        return ""
    return (
        f"the run was interrupted (Ctrl-C or SIGTERM) after {counts['executed']} executed test(s): "
        "not a verdict on the driver; run it again to the end"
    )


def _counts(tests: list[dict], records: list) -> dict[str, int]:
    """Tests per status (anything else counts as unknown), plus total, executed and retried."""
    counts = {k: 0 for k in ("passed", "failed", "broken", "skipped", "unknown")}
    for t in tests:
        counts[t["status"] if t["status"] in counts else "unknown"] += 1
    counts.update(
        total=len(tests),
        executed=counts["passed"] + counts["failed"] + counts["broken"],
        retried=sum(1 for r in records if r.retries),
    )
    return counts


def _environment(run: dict) -> dict:
    """The summary's ``environment``: cluster facts from run.json (unknown where it has none), its devices."""
    cluster = run.get("cluster") or {}
    return {
        "kubernetesVersion": runinfo.k8s_version(run),
        "kubeletVersions": [str(v) for v in cluster.get("kubelet_versions") or []],
        "containerRuntime": str(cluster.get("container_runtime") or runinfo.UNKNOWN),
        "nodeOS": str(cluster.get("node_os") or runinfo.UNKNOWN),
        "clusterKind": str(cluster.get("kind") or runinfo.UNKNOWN),
        "nodes": list(cluster.get("nodes") or []),
        "featureGates": dict(run.get("feature_gates") or {}),
        "devices": [
            {**d, "node": str(d.get("node", "")), "pool": str(d.get("pool", "")), "device": str(d.get("device", ""))}
            for d in run.get("devices") or []
        ],
    }


def _driver_entry(run: dict) -> dict:
    """The summary's ``driver``: name, version, deploy mode and profile (unknown where run.json has none)."""
    driver = run.get("driver") or {}
    return {
        "name": runinfo.driver_name(run),
        "version": runinfo.driver_version(run),
        "deploy": str(driver.get("deploy") or runinfo.UNKNOWN),
        "profile": str(driver.get("profile") or runinfo.UNKNOWN),
    }


def write(run_dir: str | pathlib.Path, data: dict) -> pathlib.Path:
    """Write ``data`` to ``run_dir/summary.json`` atomically (tmp + rename); returns the path. Paths of this
    machine become relative (the run dir, the cwd, the installed package) or ``~`` (conformance.core.portable)."""
    data = portable.scrub(data, portable.machine_prefixes(run_dir, [(shipped.SOURCE_ROOT, "")]))
    path = pathlib.Path(run_dir) / "summary.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
