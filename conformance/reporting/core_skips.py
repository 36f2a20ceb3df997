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


def unexcused(records: Iterable[TestRecord], capabilities: list[dict]) -> list[str]:
    """:func:`core_skip_failures` less the skips a run may not blame on the driver: a core test whose required
    capabilities (the records' ``feature`` labels) include one the cluster or harness lacks (``clusterLacks``, or
    evidence saying so: no node access, a gate off) or one the profile waives with an explicit ``false`` (listed
    in the verdict line as a waiver). ``capabilities`` are summary.json's entries (``{"name", "evidence",
    "clusterLacks", "available", ...}``)."""
    excused = {c["name"] for c in capabilities if _excused(c)}
    return core_skip_failures(r for r in records if not excused & set(r.labels.get("feature") or []))


def _excused(cap: dict) -> bool:
    evidence = cap.get("evidence") or ""
    if cap.get("available") is not False:
        return False
    lacks = bool(cap.get("clusterLacks")) or cap["name"] == "node_access" or "node access" in evidence
    return lacks or bool(scope.WAIVER.search(evidence))
