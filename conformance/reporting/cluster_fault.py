"""Failures caused by the cluster itself, not by the driver (issue 27 §2), and the ``ERROR (cluster)`` verdict.

A failed or broken test is attributed to the cluster (failure class ``infrastructure``, status ``broken``, its
message prefixed ``cluster fault: <evidence>``) when

* its window (Allure ``start``..``stop``, plus :data:`GRACE_S`) overlaps an outage the run's health watcher
  recorded (``cluster-health.jsonl``: API server unreachable, not ready e.g. ``[-]etcd failed``, the kubeconfig's
  credentials refused with HTTP 401/403; :mod:`conformance.k8s.health`), or
* its message shows the cluster or the machine failing whatever the driver did (:data:`SIGNS`: connection refused,
  HTTP 401 Unauthorized on our own credentials, ENOSPC "No space left on device").

A HTTP 403 alone is not attributed (a role that lacks a verb is the run's configuration, named elsewhere); within
a credentials outage it is. The verdict line is ``ERROR (cluster) — <evidence>`` when at least one failure was
attributed and none is left that the cluster does not explain (the driver is then not judged: exit code 3 in
``dra-conformance run``, "cluster or driver not usable"); with other failures beside it the verdict stays FAIL.

Sources: reporting.md §4.3 (failed = driver defect, broken = infrastructure or test error); issue 27 §2.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from conformance.k8s import health
from conformance.reporting import classify

PREFIX = "cluster fault: "
HEAD = "ERROR (cluster)"
GRACE_S = 2.0  # seconds after a test's stop an outage still explains it (the watcher probes once a second)
SIGNS = (
    (
        re.compile(r"Connection refused|ConnectionRefusedError|\[Errno 111\]"),
        "API server unreachable (connection refused)",
    ),
    (
        re.compile(r"\b401\b[^\n]{0,40}Unauthorized|Unauthorized[^\n]{0,40}\b401\b"),
        "the kubeconfig's credentials refused (HTTP 401)",
    ),
    (re.compile(rf"No space left on device|ENOSPC|\[Errno {errno.ENOSPC}\]"), "no space left on device"),
)


def sign(message: str) -> str:
    """The cluster-fault evidence a failure message carries (:data:`SIGNS`), ``""`` when none."""
    for rx, what in SIGNS:
        if rx.search(message or ""):
            return what
    return ""


def explain(start_ms: int, stop_ms: int, message: str, outages: list[health.Outage]) -> str:
    """Why a failure between ``start_ms`` and ``stop_ms`` (epoch milliseconds, Allure's) is the cluster's:
    the outages overlapping it (their :meth:`~conformance.k8s.health.Outage.text`), else :func:`sign` of
    ``message``; ``""`` when the cluster does not explain it. A 403 counts only inside a credentials outage."""
    lo, hi = start_ms / 1000.0, stop_ms / 1000.0 + GRACE_S
    hits = [o for o in outages if o.start <= hi and o.end >= lo]
    if hits:
        return "; ".join(o.text() for o in hits)
    return sign(message)


def attribute(records: list, run_dir: Path | str) -> list[dict]:
    """Mark the failed/broken ``records`` (:class:`conformance.reporting.results.TestRecord`) the cluster
    explains: status ``broken``, failure class infrastructure, message ``cluster fault: <evidence>; <message>``.
    Idempotent. Returns ``[{"id": nodeid, "evidence": text}]`` of the attributed ones, in record order."""
    outages = health.outages(health.read(Path(run_dir)))
    found = []
    for rec in records:
        if rec.status not in ("failed", "broken"):
            continue
        why = rec.message[len(PREFIX) :].split("; ", 1)[0] if rec.message.startswith(PREFIX) else ""
        why = why or explain(rec.start, rec.stop, f"{rec.message}\n{rec.trace}", outages)
        if not why:
            continue
        rec.status, rec.failure_class = "broken", classify.INFRASTRUCTURE
        if not rec.message.startswith(PREFIX):
            rec.message = f"{PREFIX}{why}; {rec.message}"
        found.append({"id": rec.label("nodeid") or rec.full_name, "evidence": why})
    return found


def section(records: list, run_dir: Path | str) -> dict | None:
    """summary.json's ``clusterFault`` after :func:`attribute`: ``{"outages": [text], "tests": [{"id",
    "evidence"}], "unexplained": [ids of failures the cluster does not explain], "line": verdict line or ""}``;
    None when the run saw no outage and no failure is attributed."""
    outages = [o.text() for o in health.outages(health.read(Path(run_dir)))]
    tests = attribute(records, run_dir)
    if not outages and not tests:
        return None
    mine = {t["id"] for t in tests}
    unexplained = [
        r.label("nodeid") or r.full_name
        for r in records
        if r.status in ("failed", "broken") and (r.label("nodeid") or r.full_name) not in mine
    ]
    return {"outages": outages, "tests": tests, "unexplained": unexplained, "line": line(outages, tests, unexplained)}


def line(outages: list[str], tests: list[dict], unexplained: list[str]) -> str:
    """``ERROR (cluster) — <evidence> (N test(s) ended by it; the driver is not judged)`` when ``tests`` is
    not empty and ``unexplained`` is; else ``""`` (the verdict stays what the summary's rules say)."""
    if not tests or unexplained:
        return ""
    evidence = outages[:3] or sorted({t["evidence"] for t in tests})[:3]
    return f"{HEAD} — {'; '.join(evidence)} ({len(tests)} test(s) ended by it; the driver is not judged)"


def report_dir_full(report_dir: Path | str, need_bytes: int = 1 << 20) -> str:
    """Evidence that the report directory's disk is full (``""`` when it is not, or does not exist): fewer than
    ``need_bytes`` free, or a small write failing with ENOSPC."""
    import shutil  # noqa: PLC0415

    root = Path(report_dir)
    if not root.is_dir():
        return ""
    free = shutil.disk_usage(root).free
    probe = root / ".dra-space-probe"
    try:
        probe.write_bytes(b"\0" * 4096)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return f"no space left on device on the report directory {root} ({free} bytes free)"
        return ""
    finally:
        probe.unlink(missing_ok=True)
    return f"the report directory {root} has {free} bytes free (< {need_bytes})" if free < need_bytes else ""


def mark_junit(path: Path | str, fault: dict | None) -> int:
    """Turn the ``<failure>`` of each test of ``fault["tests"]`` (summary.json ``clusterFault``) in the JUnit
    file at ``path`` into an ``<error>`` whose message starts ``cluster fault: <evidence>`` (a CI page then
    shows an infrastructure error, not a failed driver test). Returns how many testcases changed; 0 when
    there is no file or nothing to mark."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    path = Path(path)
    if not fault or not fault.get("tests") or not path.is_file():
        return 0
    wanted = {}
    for t in fault["tests"]:
        module, _, name = t["id"].partition("::")
        wanted[(module.removesuffix(".py").replace("/", "."), name)] = t["evidence"]
    tree, changed = ET.parse(path), 0
    for case in tree.getroot().iter("testcase"):
        why = wanted.get((case.get("classname", ""), case.get("name", "")))
        bad = case.find("failure")
        if why is None or bad is None:
            continue
        bad.tag = "error"
        bad.set("message", f"{PREFIX}{why}; {bad.get('message', '')}"[:500])
        changed += 1
    for suite in tree.getroot().iter("testsuite"):
        cases = suite.findall("testcase")
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    if changed:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    return changed
