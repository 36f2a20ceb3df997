"""What a run qualified and what it did not (issue 24 §1: no PASS by omission), and the one verdict line.

From a summary's own sections (conformance/reporting/summary.py) this module derives:

* ``waived``: the profile keys a profile turned off with an explicit ``false``
  (:data:`conformance.core.capabilities.DEFAULT_ON` and ``visibility.names_devices``), read from the capability
  evidence (``declares admin_access: false``);
* ``notClaimed``: the optional features (:data:`NOT_CLAIMED`) the profile does not claim and the driver's slices
  do not show: health, device status, binding conditions, partitions, consumable capacity, extended resource,
  upgrade path...;
* ``qualifiedAreas`` / ``notQualified``: the mission areas (:data:`conformance.core.markers.MISSION_AREAS`) in
  which a test executed and none failed, and those whose tests all skipped (a gate off, no node access for
  PodResources, a waiver): a PASS with any of the latter reads ``PASS (not qualified: admin_access)``, exit 0.

:func:`verdict_line` is the one text of the verdict; :func:`judge` computes it from a run directory and is what
both ``dra-conformance run`` (conformance/runner/cli.py) and a plain ``pytest suites --driver X`` session
(conformance/plugin.py, at session finish) print.
"""

from __future__ import annotations

import pathlib
import re

from conformance.core.capabilities import DEFAULT_ON
from conformance.reporting import narrowed, qualifiers

# opt-outs of checks that are on by default: "declares <key>: false" in a capability's evidence
WAIVER = re.compile(rf"declares ({'|'.join(map(re.escape, [*DEFAULT_ON, 'visibility.names_devices']))}): false")
# optional features a driver may not claim: capability -> what the headline calls it
NOT_CLAIMED = {
    "driver.health": "health",
    "driver.device_status": "device status",
    "driver.binding_conditions": "binding conditions",
    "driver.binding_failure": "binding failure",
    "driver.partitions": "partitions",
    "driver.consumable_capacity": "consumable capacity",
    "driver.published_taints": "published taints",
    "driver.extended_resource_name": "extended resource",
    "driver.admin_access_signal": "admin access signal",
    "driver.opaque_config": "opaque config",  # a profile without an opaque_config sample
    "driver_upgrade": "upgrade path",
    "driver.cdi_identity": "CDI device identity",  # a profile without a cdi_identity pattern
    "driver_downgrade": "downgrade",
    "driver_surge_update": "rolling update with surge",  # a profile without deploy.rolling_update: surge
    # CAP-04; listed only where the driver claims consumable capacity (noise for every other driver)
    "driver.consumed_capacity_signal": "consumed capacity signal",
}
# a capability listed only when the profile leaves it out; otherwise the deployer or handle cannot do it
_PROFILE_SAYS = {
    "driver_upgrade": "upgrade_from",
    "driver_downgrade": "upgrade_from",
    "driver_surge_update": "does not declare rolling_update",
}
# evidence of a capability the cluster or the harness lacks rather than the profile (not "not claimed")
_NOT_THE_PROFILE = ("cluster lacks", "could not be read")


def waived(capabilities: list[dict]) -> list[str]:
    """The profile keys waived by an explicit ``false`` (sorted, unique), from the summary's ``capabilities``
    entries (``{"name", "evidence", ...}``)."""
    return sorted({m.group(1) for c in capabilities if (m := WAIVER.search(c.get("evidence") or ""))})


def not_claimed(capabilities: list[dict]) -> list[str]:
    """The names (:data:`NOT_CLAIMED` values, in its order) of the optional features the profile does not claim:
    not declared, not available, and unavailable because of the profile (``upgrade path``: the profile names no
    ``upgrade_from``; ``rolling update with surge``: no ``rolling_update: surge``), not because the cluster or
    the deployer lacks them. ``consumed capacity signal`` (CAP-04) only for a driver that claims consumable
    capacity."""
    by_name = {c["name"]: c for c in capabilities}
    out = []
    for name, label in NOT_CLAIMED.items():
        cap = by_name.get(name)
        if cap is None or cap.get("declared") or cap.get("available") is not False:
            continue
        evidence = cap.get("evidence") or ""
        if any(s in evidence for s in _NOT_THE_PROFILE) or WAIVER.search(evidence):  # the cluster's, or a waiver
            continue
        if name in _PROFILE_SAYS and _PROFILE_SAYS[name] not in evidence:  # a deployer or handle that cannot
            continue
        if name == "driver.consumed_capacity_signal" and not _claims(by_name.get("driver.consumable_capacity")):
            continue
        out.append(label)
    return out


def _claims(cap: dict | None) -> bool:
    """Whether a summary capability entry is claimed: the profile declares it or the driver's slices show it."""
    return bool(cap and (cap.get("declared") or cap.get("available")))


def areas(mission_areas: list[dict]) -> tuple[list[str], list[str]]:
    """``(qualifiedAreas, notQualified)`` from the summary's ``missionAreas``: an area whose status is ``pass``
    (a test executed, none failed) is qualified; one whose tests all skipped (``skip``) is not. An area no test
    of the run belongs to (``not-tested``: outside the profile) is neither; a failing one fails the verdict."""
    qualified = [a["name"] for a in mission_areas if a["status"] == "pass"]
    return qualified, [a["name"] for a in mission_areas if a["status"] == "skip"]


def fields(capabilities: list[dict], mission_areas: list[dict]) -> dict:
    """The summary.json fields of this module: ``{"qualifiedAreas", "notQualified", "waived", "notClaimed"}``
    (lists of names)."""
    qualified, missing = areas(mission_areas)
    return {
        "qualifiedAreas": qualified,
        "notQualified": missing,
        "waived": waived(capabilities),
        "notClaimed": not_claimed(capabilities),
    }


def verdict_line(summary: dict) -> str:
    """The verdict as one line: ``FAIL``; ``PASS`` only when nothing was waived and every mission area qualified,
    else e.g. ``PASS (waived: admin_access; not qualified: admin_access, podresources)``, with the excused core
    skips named (``core not run: KEP5970-6 — no node access``: summary.json ``coreNotRun``), the
    :mod:`conformance.reporting.qualifiers` parts (``partly tested: driver.health — ...``, ``not testable on this
    cluster: DRA plugin contract ...``, ``not tested (profile gives nothing to test it with): opaque config ...``)
    or, for a profile that
    leaves mission areas out, ``PASS (outside profile core: admin_access, ...)`` (never a bare PASS); a narrowed
    run's :func:`conformance.reporting.narrowed.line` with the same parts inside its parentheses (``PASS
    (narrowed: -k x; 3 of 9 tests; waived: admin_access) — not a qualification ...``). ``summary``: a
    summary.json document."""
    line = narrowed.line(summary["verdict"], summary["profile"], summary.get("narrowed"))
    if summary["verdict"] not in narrowed.PASSING:
        return line
    parts = [f"waived: {', '.join(summary['waived'])}"] if summary.get("waived") else []
    parts += [f"not qualified: {', '.join(summary['notQualified'])}"] if summary.get("notQualified") else []
    parts += [f"core not run: {', '.join(summary['coreNotRun'])}"] if summary.get("coreNotRun") else []
    parts += qualifiers.verdict_parts(summary)  # partly tested, not testable here, not tested by omission
    outside = [a["name"] for a in summary.get("missionAreas") or [] if a["status"] == "not-tested"]
    if outside and summary["verdict"] != narrowed.NARROWED_PASS:  # a narrowed line already says "not a qualification"
        parts.append(f"outside profile {summary['profile']}: {', '.join(outside)}")
    if not parts:
        return line
    if summary["verdict"] == narrowed.NARROWED_PASS:  # PASS (narrowed: ...; waived: ...) — not a qualification
        head, tail = line.split(")", 1)
        return f"{head}; {'; '.join(parts)}){tail}"
    return f"PASS ({'; '.join(parts)})"


def judge(
    report_dir: str | pathlib.Path, allure_dir: str | pathlib.Path | None = None
) -> tuple[str, tuple[str, ...], dict | None]:
    """``(verdict line, reasons, narrowed)`` of the run in ``report_dir`` from its summary (writes nothing;
    ``allure_dir``: the Allure results, default ``report_dir/allure-results``): reasons empty means the verdict
    rules pass. Raises ``FileNotFoundError`` when the run left no results and ``jsonschema.ValidationError`` on
    a summary that breaks its schema."""
    from conformance.reporting import summary  # noqa: PLC0415 - summary imports this module

    data = summary.build(report_dir, allure_dir)
    return data["verdictLine"], tuple(data["verdictReasons"]), data["narrowed"]


CALLER_PRINTS = False  # True while `dra-conformance run` drives pytest: it prints the verdict line itself
NO_RESULTS = "VERDICT: FAIL (no results to judge: {why})"


def at_session_finish(
    report_dir: str | pathlib.Path, exitstatus: int, allure_dir: str | pathlib.Path | None = None
) -> tuple[str, bool]:
    """The verdict of a plain ``pytest suites --driver X`` session, computed by :func:`judge` as ``dra-conformance
    run`` does: ``(line to print, fails)``; ``fails`` is True when pytest would exit 0 but the verdict rules fail
    (the session's exit status then becomes 1). ``allure_dir``: the directory the user gave ``--alluredir``
    (None: ``report_dir/allure-results``). Fails closed (``VERDICT: FAIL (no results to judge: ...)``) when
    there is no Allure result to judge (``-p no:allure_pytest``, an empty ``--alluredir``): a
    session without results never exits 0 (breaker finding 8). ``("", False)`` while ``dra-conformance run``
    prints the verdict itself (:data:`CALLER_PRINTS`) or when the report directory has no run.json (the
    harness, which writes it at session start, did not run this session: nothing of a driver to judge)."""
    root = pathlib.Path(report_dir)
    if CALLER_PRINTS or not (root / "run.json").is_file():  # no run.json: the harness did not run this session
        return "", False
    results_dir = pathlib.Path(allure_dir) if allure_dir else root / "allure-results"
    if not results_dir.is_dir() or not any(results_dir.glob("*-result.json")):
        why = f"no Allure results in {results_dir} (is allure-pytest loaded?)"
        return NO_RESULTS.format(why=why), exitstatus == 0
    try:
        line, reasons, _ = judge(root, results_dir)
    except Exception as exc:  # noqa: BLE001 - fail closed: no summary, no PASS
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"VERDICT: FAIL (the qualification summary could not be built: {first})", exitstatus == 0
    if line.startswith("ERROR (cluster)"):  # the cluster's own fault ended the failing tests (cluster_fault.py)
        return f"VERDICT: {line}", exitstatus == 0
    if reasons or exitstatus != 0:
        why = "; ".join(reasons)[:400] or f"pytest exit status {exitstatus}"
        return f"VERDICT: FAIL ({why})", exitstatus == 0
    return f"VERDICT: {line} (report {root}; build it with `dra-conformance report {root}`)", False


# driver capabilities the published inventory decides, not the profile (breaker finding 7): when unavailable,
# "not testable here" with why, instead of in no row at all
INVENTORY_DECIDES = {"driver.multiple_devices": "driver publishes < 2 devices per node"}


def _untestable(cap: dict) -> str:
    """A capability the cluster does not offer, with what would enable it."""
    name = cap["name"]
    if name in INVENTORY_DECIDES:
        return f"{name} (not testable here: {INVENTORY_DECIDES[name]})"
    if name.startswith("gate."):
        return f"{name} (feature gate off: enable {name[5:]}; a local/kind cluster: --feature-gates all)"
    if name == "node_access":
        return "node_access (no node access: --node-access privileged-pod, or a local/kind cluster)"
    if name.startswith("api."):
        return f"{name} (not served: --runtime-config resource.k8s.io/{name[4:]}=true)"
    if name.startswith(("allocator.", "platform.")):
        evidence = cap.get("evidence", "")
        if evidence.endswith(", open)"):  # no release fixes it yet (conformance/core/release_gaps.py)
            return f"{name} (Kubernetes gap no release fixes yet: {evidence[:80]}... {evidence.rsplit('(', 1)[-1]}"
        return f"{name} (release gap of Kubernetes {evidence[:80]}: a newer --k8s-version)"
    return f"{name} ({(cap.get('evidence') or 'not offered here')[:100]})"


def _partial(cap: dict) -> str:
    """A ``partial`` capability with why its skipped tests did not run (the first gap's own skip reason, not an
    assumed "no fitting device": a profile without a health switch leaves a gap too, breaker s15 C6)."""
    gaps = (cap.get("coverage") or {}).get("gaps") or []
    if not gaps:
        return cap["name"]
    why = gaps[0].partition(": ")[2][:100]
    more = f"; +{len(gaps) - 1} more" if len(gaps) > 1 else ""
    return f"{cap['name']} ({len(gaps)} test(s) not run: {why}{more})"


def box(summary: dict) -> list[tuple[str, list[str]]]:
    """The scope box under summary.md's headline and on the Allure first screen: ``[(row title, names)]`` for
    passed capabilities, capabilities not testable on this cluster (with the flag that would enable them), not
    claimed, waived, partly tested capabilities (coverage gaps, with the skip's own reason) and the mission areas
    outside this profile. Tests the cluster could not reach (summary.json ``notTestable``: no relay image for the
    DRA plugin socket) join the "not testable" row."""
    caps = summary.get("capabilities") or []

    def lacks(c: dict) -> bool:
        return bool(c.get("clusterLacks")) or "cluster lacks" in (c.get("evidence") or "")

    untestable = [
        c
        for c in caps
        if c["status"] == "skip" and (lacks(c) or not c["name"].startswith("driver.") or c["name"] in INVENTORY_DECIDES)
    ]
    return [
        ("Passed", [c["name"] for c in caps if c["status"] == "pass"]),
        ("Not testable on this cluster", [_untestable(c) for c in untestable] + list(summary.get("notTestable") or [])),
        ("Not claimed by the driver", list(summary.get("notClaimed") or [])),
        ("Waived by the profile", list(summary.get("waived") or [])),
        ("Partly tested (coverage gap)", [_partial(c) for c in caps if c["status"] == "partial"]),
        ("Outside this profile", [a["name"] for a in summary.get("missionAreas") or [] if a["status"] == "not-tested"]),
    ]


def failing(summary: dict) -> list[str]:
    """One line per failed or broken test: the first line of its message, its failure class, its evidence folder
    and the command that reruns it."""
    from conformance.reporting import evidence  # noqa: PLC0415 - only a failing run needs it

    driver, out = summary["driver"]["profile"], []
    for t in summary.get("tests") or []:
        if t["status"] not in ("failed", "broken"):
            continue
        first = ((t.get("reason") or "").strip().splitlines() or ["no message"])[0][:200]
        out.append(
            f"`{t['id']}`: {first} (class {t.get('failureClass') or '?'}; evidence: "
            f"evidence/{evidence.test_id(t['id'])}/; rerun: `dra-conformance run --driver {driver} "
            f"--profile {summary['profile']} -- '{t['id']}'`)"
        )
    return out
