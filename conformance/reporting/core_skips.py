"""The core-never-skips rule (issue 24 §3): a ``core`` test (the KEP-5970 minimum behaviours) that was skipped
cannot earn a PASS, whatever the reason (a pinned device or a whole node always exists for a published driver;
KEP5970-7 runs with one device when no whole group fits together). The verdict code calls
:func:`core_skip_failures` and fails the run when it returns anything. Pure: records in, messages out.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.reporting import scope
from conformance.reporting.results import TestRecord


def core_skip_failures(records: Iterable[TestRecord]) -> list[str]:
    """One message per skipped test whose ``profile`` label is ``core`` (``"<full name>: core test skipped:
    <skip reason>"``), in the records' order; empty when no core test was skipped."""
    return [
        f"{r.full_name}: core test skipped: {r.message or '(no reason given)'}"
        for r in records
        if r.status == "skipped" and r.label("profile") == "core"
    ]


def unexcused(records: Iterable[TestRecord], capabilities: list[dict], declined: bool = False) -> list[str]:
    """:func:`core_skip_failures` less the skips a run may not blame on the driver: a core test whose required
    capabilities (the records' ``feature`` labels) include one the cluster or harness lacks (``clusterLacks``, or
    evidence saying so: no node access, a gate off) or one the profile waives with an explicit ``false`` (listed
    in the verdict line as a waiver). ``capabilities`` are summary.json's entries (``{"name", "evidence",
    "clusterLacks", "available", ...}``). ``declined``: the run turned off the node access its cluster offers
    (``--node-access none`` on a local/kind cluster, run.json ``node_access.declined``): a missing node access
    then excuses nothing (breaker finding 1)."""
    excused = {c["name"] for c in capabilities if _why(c, declined)}
    failures = core_skip_failures(r for r in records if not excused & set(r.labels.get("feature") or []))
    hint = " (--node-access none turned off the node access this cluster offers: drop it)" if declined else ""
    return [f + hint if "node access" in f or "node_access" in f else f for f in failures]


def excused(records: Iterable[TestRecord], capabilities: list[dict], declined: bool = False) -> list[str]:
    """The core tests skipped with an excuse, for the verdict line (``core not run: KEP5970-6 — no node
    access``): one ``"<scenario> — <why>"`` per skipped core test whose required capabilities include an excused
    one (:func:`unexcused`), the scenario being its first ``KEP…`` story label (else its name); ``why`` is ``no
    node access``, ``waived: <key>`` or ``cluster lacks <capability>``. Empty when no core test was excused."""
    whys = {c["name"]: why for c in capabilities if (why := _why(c, declined))}
    out = []
    for r in records:
        if r.status != "skipped" or r.label("profile") != "core":
            continue
        reasons = sorted({whys[f] for f in r.labels.get("feature") or [] if f in whys})
        if reasons:
            kep = [s for s in r.labels.get("story") or [] if s.startswith("KEP")]
            out.append(f"{(kep or [r.name])[0]} — {', '.join(reasons)}")
    return out


def _why(cap: dict, declined: bool) -> str:
    """Why ``cap`` excuses a core skip (``""``: it does not): a waiver, a missing node access the run did not
    decline, or a capability the cluster lacks."""
    evidence = cap.get("evidence") or ""
    if cap.get("available") is not False:
        return ""
    if waiver := scope.WAIVER.search(evidence):
        return f"waived: {waiver.group(1)}"
    if cap["name"] == "node_access" or "node access" in evidence:
        return "" if declined else "no node access"
    return f"cluster lacks {cap['name']}" if cap.get("clusterLacks") else ""
