"""The core-never-skips rule (issue 24 §3): a ``core`` test (the KEP-5970 minimum behaviours) that was skipped
cannot earn a PASS, whatever the reason (a pinned device or a whole node always exists for a published driver;
KEP5970-7 runs with one device when no whole group fits together). The verdict code calls
:func:`core_skip_failures` and fails the run when it returns anything. Pure: records in, messages out.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.reporting.results import TestRecord


def core_skip_failures(records: Iterable[TestRecord]) -> list[str]:
    """One message per skipped test whose ``profile`` label is ``core`` (``"<full name>: core test skipped:
    <skip reason>"``), in the records' order; empty when no core test was skipped."""
    return [
        f"{r.full_name}: core test skipped: {r.message or '(no reason given)'}"
        for r in records
        if r.status == "skipped" and r.label("profile") == "core"
    ]
