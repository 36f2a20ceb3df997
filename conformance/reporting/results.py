"""Reading an Allure results directory back into one record per test.

allure-pytest writes one ``<uuid>-result.json`` per test attempt (reruns and xdist workers included).
:func:`load` keeps, for each ``historyId`` (test + Kubernetes version + driver), the attempt that finished
last and counts the others as retries; a test with any failed or broken attempt is not passed, whatever its last
attempt did (:func:`flaky_outcome`: a driver that fails and then passes on a retry is not proven to work, breaker
s15 C1). Source: Allure 2 result format (allure-python ``allure_commons.model2``).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

from conformance.reporting import classify

EXECUTED = ("passed", "failed", "broken")


@dataclasses.dataclass
class TestRecord:
    """One test's final result.

    ``status``: passed|failed|broken|skipped|unknown; ``message``: statusDetails.message (skip reason with a
    ``Skipped: `` prefix removed); ``labels``: name -> values; ``parameters``: name -> value (unquoted);
    ``attachments``: ``[{"name", "source", "type"}]``; ``start``/``stop``: ms since the epoch;
    ``retries``: earlier attempts of the same historyId; ``failure_class``: see :mod:`classify`.
    """

    name: str
    full_name: str
    history_id: str
    status: str
    message: str
    trace: str
    labels: dict[str, list[str]]
    parameters: dict[str, str]
    attachments: list[dict]
    start: int
    stop: int
    retries: int = 0
    failure_class: str | None = None

    def label(self, name: str, default: str = "") -> str:
        """The first value of label ``name``."""
        return (self.labels.get(name) or [default])[0]

    @property
    def duration_s(self) -> float:
        """Duration in seconds."""
        return max(0, self.stop - self.start) / 1000.0


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _attachments(data: dict) -> list[dict]:
    found = list(data.get("attachments") or [])
    for step in data.get("steps") or []:
        found += _attachments(step)
    return found


def record_from(data: dict) -> TestRecord:
    """A :class:`TestRecord` from one parsed ``*-result.json``."""
    labels: dict[str, list[str]] = {}
    for label in data.get("labels") or []:
        labels.setdefault(str(label.get("name")), []).append(str(label.get("value")))
    details = data.get("statusDetails") or {}
    status = str(data.get("status") or "unknown")
    message = str(details.get("message") or "").strip()
    if status == "skipped" and message.startswith("Skipped:"):
        message = message[len("Skipped:") :].strip()
    params = {str(p.get("name")): _unquote(str(p.get("value"))) for p in data.get("parameters") or []}
    rec = TestRecord(
        name=str(data.get("name") or ""),
        full_name=str(data.get("fullName") or data.get("name") or ""),
        history_id=str(data.get("historyId") or ""),
        status=status,
        message=message,
        trace=str(details.get("trace") or ""),
        labels=labels,
        parameters=params,
        attachments=_attachments(data),
        start=int(data.get("start") or 0),
        stop=int(data.get("stop") or 0),
    )
    rec.failure_class = rec.label("failure_class") or classify.classify_message(message, status)
    if status not in ("failed", "broken"):
        rec.failure_class = None
    if status == "broken" and rec.failure_class == classify.DRIVER_DEFECT:
        # a driver defect raised as an exception (WaitFailed on FailedPrepareDynamicResources, DriverNotReady,
        # LeakError): Allure calls every non-assertion exception broken; the verdict counts it failed (issue 24)
        rec.status = "failed"
    return rec


def load(results_dir: str | pathlib.Path) -> list[TestRecord]:
    """The final record of every test in ``results_dir``, sorted by full name then parameters.

    Raises ``FileNotFoundError`` naming the directory when it does not exist; unreadable result files raise
    ``ValueError`` naming the file.
    """
    root = pathlib.Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no Allure results directory (was pytest run with --report-dir?)")
    latest: dict[str, TestRecord] = {}
    attempts: dict[str, list[TestRecord]] = {}
    for path in sorted(root.glob("*-result.json")):
        try:
            rec = record_from(json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a readable Allure result ({exc})") from exc
        key = rec.history_id or f"{rec.full_name}|{sorted(rec.parameters.items())}"
        attempts.setdefault(key, []).append(rec)
        if key not in latest or rec.stop >= latest[key].stop:
            latest[key] = rec
    for key, rec in latest.items():
        rec.retries = len(attempts[key]) - 1
        flaky_outcome(rec, attempts[key])
    return sorted(latest.values(), key=lambda r: (r.full_name, sorted(r.parameters.items())))


def flaky_outcome(final: TestRecord, attempts: list[TestRecord]) -> None:
    """Make ``final`` (the last of ``attempts``, every attempt of one test) failed when an earlier attempt failed
    or broke and ``final`` did not: its message names the attempts, e.g. ``failed on attempt 1 of 2: <first line>;
    passed on a retry: flaky is not a pass``; its failure class and trace are the failed attempt's. Unchanged when
    no earlier attempt failed or ``final`` itself failed. Attempts are ordered by their ``stop`` (ms)."""
    if final.status in ("failed", "broken"):
        return
    ordered = sorted(attempts, key=lambda r: r.stop)
    bad = [(n, r) for n, r in enumerate(ordered, 1) if r is not final and r.status in ("failed", "broken")]
    if not bad:
        return
    number, first = bad[0]
    head = (first.message.splitlines() or [first.status])[0][:300]
    which = ", ".join(str(n) for n, _ in bad)
    final.message = (
        f"{first.status} on attempt{'s' if len(bad) > 1 else ''} {which} of {len(ordered)}: {head}; "
        f"{final.status} on a retry: flaky is not a pass"
    )
    final.trace = first.trace
    final.status = "failed"
    final.failure_class = first.failure_class or classify.DRIVER_DEFECT
