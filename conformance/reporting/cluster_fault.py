"""Failures caused by the cluster itself, not by the driver (issue 27 §2), and the ``ERROR (cluster)`` verdict.

The rule: a failure is the cluster's only on what the harness itself OBSERVED (its health watcher's log, or ENOSPC
on the run's own report directory), never on text alone, since a driver can write any text into a failure (its
NodePrepare error reaches the message through a kubelet event; a crashed plugin's stale socket makes grpc say
"Connection refused"). A failed or broken test is attributed to the cluster (failure class ``infrastructure``,
status ``broken``, its message prefixed ``cluster fault: <evidence>``) when

* its window (Allure ``start``..``stop``) overlaps an outage the run's health watcher recorded
  (``cluster-health.jsonl``: API server unreachable, not ready e.g. ``[-]etcd failed``, the kubeconfig's
  credentials refused with HTTP 401; :mod:`conformance.k8s.health`; or one of the run's nodes not Ready, e.g.
  ``Ready=Unknown`` "Kubelet stopped posting node status.": :mod:`conformance.k8s.node_health`, the evidence
  names the node; or no kube-scheduler leading, its Lease released or not renewed:
  :mod:`conformance.k8s.scheduler_health`) AND it ended during that outage or within :func:`grace` after it, or
* its message shows connection refused or HTTP 401 (:data:`SIGNS`) and an outage of the same kind overlaps its
  window, or
* its message shows ENOSPC ("No space left on device") AND names the run's report directory.

A node outage never explains a test that takes nodes down itself (:data:`TAKES_NODES_DOWN`: its ``requires``
capabilities, Allure ``feature`` labels): a driver that does not come back after the harness's reboot is judged.
A one-probe blip, a /readyz the run cannot read (403, 404: no outage at all, see ``health.outages``) and an outage
the test merely lived through (it failed long after) excuse nothing. The verdict line is ``ERROR (cluster) —
<evidence>`` when at least one failure was attributed and none is left that the cluster does not explain (the
driver is then not judged: exit code 3 in ``dra-conformance run``, "cluster or driver not usable"); with other
failures beside it the verdict stays FAIL.

Sources: reporting.md §4.3 (failed = driver defect, broken = infrastructure or test error); issue 27 §2; the
grace from the client retry policy (conformance/k8s/retries.py, conformance/k8s/client.py).
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from conformance.core import timeouts
from conformance.k8s import health, node_health, scheduler_health
from conformance.reporting import classify

PREFIX = "cluster fault: "
HEAD = "ERROR (cluster)"
# a probe's timestamp is taken when it returns: an outage's logged start lags the real one by up to one interval
# plus one probe timeout, so a test that failed that much before the logged start still failed during it
SLACK_S = health.INTERVAL + health.PROBE_TIMEOUT
# after the API server answers again, a failure it caused still surfaces for a while: a request sent during the
# outage hangs up to the client's request timeout (30 s, K8s.request_timeout), retries.retry_transient then waits
# up to 0.3+0.6+1.2+2.4+4.8 = 9.3 s and sends again (another 30 s at most), and Allure's stop comes after the
# test's own teardown (evidence, deletions: ~20 s): 30 + 9.3 + 30 + 20 ≈ 90 s, times the run's --timeout-scale
GRACE_S = 90.0
TAKES_NODES_DOWN = ("node_reboot", "kubelet_restart")  # capabilities of tests whose own step makes a node NotReady
SIGNS = (  # (pattern, evidence, the outage kind that must overlap the test for the sign to count)
    (
        re.compile(r"Connection refused|ConnectionRefusedError|\[Errno 111\]"),
        "API server unreachable (connection refused)",
        "unreachable",
    ),
    (
        re.compile(r"\b401\b[^\n]{0,40}Unauthorized|Unauthorized[^\n]{0,40}\b401\b"),
        "the kubeconfig's credentials refused (HTTP 401)",
        "credentials-refused",
    ),
    (re.compile(rf"No space left on device|ENOSPC|\[Errno {errno.ENOSPC}\]"), "no space left on device", "enospc"),
)


def grace() -> float:
    """Seconds after an outage ends in which a test's end is still explained by it (:data:`GRACE_S` times the
    run's timeout scale, conformance/core/timeouts.py)."""
    return GRACE_S * timeouts.scale()


def signs(message: str) -> list[tuple[str, str]]:
    """The ``(evidence, kind)`` of each :data:`SIGNS` pattern ``message`` matches (a hint, never proof)."""
    return [(what, kind) for rx, what, kind in SIGNS if rx.search(message or "")]


def sign(message: str) -> str:
    """The first :data:`SIGNS` evidence ``message`` carries, ``""`` when none (text only: see :func:`explain`)."""
    found = signs(message)
    return found[0][0] if found else ""


def _names_dir(message: str, report_dir: Path | str | None) -> bool:
    """Whether ``message`` names the report directory (as given, resolved, or its last two parts)."""
    if not report_dir:
        return False
    root = Path(report_dir)
    names = {str(root), str(root.resolve()), str(Path(*root.resolve().parts[-2:]))}
    return any(n and n != "." and n in message for n in names)


def explain(
    start_ms: int, stop_ms: int, message: str, outages: list[health.Outage], report_dir: Path | str | None = None
) -> str:
    """Why a failure between ``start_ms`` and ``stop_ms`` (epoch milliseconds, Allure's) is the cluster's, ``""``
    when the cluster does not explain it (see the module docstring): the outages it ended in or within
    :func:`grace` after (their :meth:`~conformance.k8s.health.Outage.text`); else a connection-refused or HTTP 401
    sign of ``message`` with an overlapping outage of that kind; else ENOSPC naming ``report_dir``."""
    lo, stop = start_ms / 1000.0, stop_ms / 1000.0
    overlap = [o for o in outages if o.start <= stop + SLACK_S and o.end >= lo]
    ended_in = [o for o in overlap if stop <= o.end + grace()]
    if ended_in:
        return "; ".join(o.text() for o in ended_in)
    for what, kind in signs(message):
        hits = [o for o in overlap if kind in (o.kinds or (o.what,))]
        if hits:
            return f"{what}; {'; '.join(o.text() for o in hits)}"
        if kind == "enospc" and _names_dir(message, report_dir):
            return f"{what} on the report directory"
    return ""


def observed(samples: list[dict]) -> list[health.Outage]:
    """Every outage of a health log (as ``health.read`` returns): the API server's, then its nodes', then the
    kube-scheduler's (none for a run whose cluster health could not be watched)."""
    if health.unprobeable(samples):
        return []
    return health.outages(samples) + node_health.outages(samples) + scheduler_health.outages(samples)


def _takes_nodes_down(rec) -> bool:
    """Whether the test of ``rec`` reboots a node or restarts a kubelet itself (its ``feature`` labels)."""
    return any(cap in TAKES_NODES_DOWN for cap in rec.labels.get("feature", []))


def attribute(records: list, run_dir: Path | str) -> list[dict]:
    """Mark the failed/broken ``records`` (:class:`conformance.reporting.results.TestRecord`) the cluster
    explains: status ``broken``, failure class infrastructure, message ``cluster fault: <evidence>; <message>``.
    Idempotent. Returns ``[{"id": nodeid, "evidence": text}]`` of the attributed ones, in record order."""
    outages = observed(health.read(Path(run_dir)))
    found = []
    for rec in records:
        if rec.status not in ("failed", "broken"):
            continue
        why = rec.message[len(PREFIX) :].split("; ", 1)[0] if rec.message.startswith(PREFIX) else ""
        mine = [o for o in outages if not o.node] if _takes_nodes_down(rec) else outages
        why = why or explain(rec.start, rec.stop, f"{rec.message}\n{rec.trace}", mine, run_dir)
        if not why:
            continue
        rec.status, rec.failure_class = "broken", classify.INFRASTRUCTURE
        if not rec.message.startswith(PREFIX):
            rec.message = f"{PREFIX}{why}; {rec.message}"
        found.append({"id": rec.label("nodeid") or rec.full_name, "evidence": why})
    return found


def section(records: list, run_dir: Path | str) -> dict | None:
    """summary.json's ``clusterFault`` after :func:`attribute`: ``{"outages": [text], "tests": [{"id",
    "evidence"}], "unexplained": [ids of failures the cluster does not explain], "line": verdict line or ""}``,
    plus ``"unwatched": why`` when the health watcher could not watch this cluster (its first /readyz probe was
    not ready); None when the run saw no outage, attributed no failure and was watched."""
    samples = health.read(Path(run_dir))
    outages = [o.text() for o in observed(samples)]
    tests = attribute(records, run_dir)
    unwatched = health.unprobeable(samples)
    if not outages and not tests and not unwatched:
        return None
    mine = {t["id"] for t in tests}
    unexplained = [
        r.label("nodeid") or r.full_name
        for r in records
        if r.status in ("failed", "broken") and (r.label("nodeid") or r.full_name) not in mine
    ]
    fault = {"outages": outages, "tests": tests, "unexplained": unexplained, "line": line(outages, tests, unexplained)}
    if unwatched:
        fault["unwatched"] = f"cluster faults could not be watched (/readyz at the start: {unwatched[:300]})"
    return fault


def line(outages: list[str], tests: list[dict], unexplained: list[str]) -> str:
    """``ERROR (cluster) — <evidence> (N test(s) ended by it; the driver is not judged)`` when ``tests`` is
    not empty and ``unexplained`` is; else ``""`` (the verdict stays what the summary's rules say)."""
    if not tests or unexplained:
        return ""
    evidence = list(dict.fromkeys(t["evidence"] for t in tests))[:3]  # what explained them, not the run's 1st blip
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


def mark_allure(results_dir: Path | str, fault: dict | None) -> int:
    """Give each test of ``fault["tests"]`` (summary.json ``clusterFault``) the same judgement in its Allure result
    files under ``results_dir`` (the ``nodeid`` label): status ``broken``, label ``failure_class``
    infrastructure, message ``cluster fault: <evidence>; ...``, so the Allure report's categories agree with the
    ERROR (cluster) verdict (s16 breaker F4). Idempotent; returns how many files changed."""
    import json  # noqa: PLC0415

    wanted = {t["id"]: t["evidence"] for t in (fault or {}).get("tests") or []}
    folder, changed = Path(results_dir), 0
    if not wanted or not folder.is_dir():
        return 0
    for path in sorted(folder.glob("*-result.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        labels = data.get("labels") or []
        why = next((wanted.get(lab.get("value")) for lab in labels if lab.get("name") == "nodeid"), None)
        if why is None or data.get("status") not in ("failed", "broken"):
            continue
        data["status"] = "broken"
        data["labels"] = [lab for lab in labels if lab.get("name") != "failure_class"]
        data["labels"].append({"name": "failure_class", "value": classify.INFRASTRUCTURE})
        details = data.setdefault("statusDetails", {})
        if not str(details.get("message") or "").startswith(PREFIX):
            details["message"] = f"{PREFIX}{why}; {details.get('message') or ''}"
        path.write_text(json.dumps(data), encoding="utf-8")
        changed += 1
    return changed


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
