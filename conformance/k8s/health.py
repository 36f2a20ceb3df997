"""The API server's health during a run, with timestamps (issue 27 §2: faults of the cluster itself).

:class:`Watcher` polls ``GET /readyz?verbose`` (kube-apiserver's readiness, including its ``etcd`` check) once per
``interval`` seconds with the run's own credentials, in a daemon thread of the run's owner process, and appends
every change of state to ``<report dir>/cluster-health.jsonl``: one JSON object a line, ``{"t": epoch seconds,
"ok": bool, "what": short class, "detail": text}``, and also the second bad sample in a row (so the log shows an
outage was confirmed). ``what`` is ``ready``, ``unreachable`` (connection refused or reset, timeout),
``not-ready`` (HTTP 5xx: e.g. ``[-]etcd failed``), ``credentials-refused`` (HTTP 401 on the kubeconfig's
credentials) or ``error`` (any other answer, e.g. 403 or 404 from a hardened cluster or an API proxy: not an
outage). A probe is one request, never retried, with a short timeout; the watcher never raises into the run (a
health log it cannot write, e.g. ENOSPC on the report dir, is kept in memory and named by
:attr:`Watcher.write_error`).

The watcher only watches what it saw healthy: :meth:`Watcher.start` probes once before the run, and when that
probe is not ``ready`` (403, 404, no answer...) it logs one ``unprobeable`` entry, starts no thread, and
:func:`outages` finds none (the report says cluster faults could not be watched: :func:`unprobeable`).

:func:`outages` turns the log into windows ``(start, end, what, detail)`` that
:mod:`conformance.reporting.cluster_fault` compares with each failed test's start and stop. A window opens only
after a ``ready`` sample and needs :data:`MIN_BAD` consecutive bad samples (a single slow probe is no outage).

Given the run's node names, the watcher also samples their ``Ready`` condition every few seconds into the same log
(entries with ``"scope": "nodes"``, ignored by :func:`outages`; conformance/k8s/node_health.py): a node cut off is a
fault of the cluster too. It also reads the kube-scheduler's Lease every few seconds (entries with ``"scope":
"scheduler"``; conformance/k8s/scheduler_health.py): no scheduler leading is a fault of the cluster as well.

The watcher also bounds how long API calls are resent during an outage: a process that follows the log
(:func:`follow`: the owner at set-up, each xdist worker when it attaches) asks :func:`down_evidence` before resending a
request (conformance/k8s/retries.py); once the log shows a confirmed outage still open and older than
:data:`DOWN_BOUND_S` times ``--timeout-scale``, the call fails with that evidence instead of waiting out its
attempts (a request to an API server whose etcd is stopped hangs to the client's 30 s timeout each time).

Sources: kube-apiserver ``/readyz`` and ``/readyz?verbose`` (Kubernetes docs "Kubernetes API health endpoints";
the ``etcd`` and ``etcd-readiness`` checks), HTTP 401 for a token whose ServiceAccount was deleted
(KEP-1205 bound service account tokens).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from pathlib import Path

FILE = "cluster-health.jsonl"
INTERVAL = 1.0  # seconds between probes
PROBE_TIMEOUT = 3.0  # seconds for one probe
OUTAGE_KINDS = ("unreachable", "not-ready", "credentials-refused")  # the bad samples that make an outage
MIN_BAD = 2  # consecutive bad samples before a window counts as an outage (no one-probe blips)
START_TRIES = 3  # first probes before the run gives up watching (only an unreachable/not-ready answer is retried)
UNPROBEABLE = "unprobeable"  # the one entry of a run whose first probe was not ready: nothing is watched
DOWN_BOUND_S = 60.0  # seconds (times --timeout-scale) of a confirmed outage after which API calls are not resent
_followed: Path | None = None  # the health log this process's retry policy reads (follow())


@dataclasses.dataclass(frozen=True)
class Outage:
    """A window in which the API server did not serve: ``start``/``end`` epoch seconds (``end``: the first ready
    probe after it, or the last probe of the run when it never came back), ``what`` (see the module docstring),
    ``detail`` (the first failing probe's text)."""

    start: float
    end: float
    what: str
    detail: str
    kinds: tuple[str, ...] = ()  # every class of bad sample seen in it (``what`` first)
    node: str = ""  # the node of a ``node-not-ready`` outage (conformance/k8s/node_health.py)

    def text(self) -> str:
        """``API server unreachable 18:30:01-18:30:09 UTC (8 s): <detail>``."""
        span = f"{_hms(self.start)}-{_hms(self.end)} UTC ({self.end - self.start:.0f} s)"
        return f"{TITLES.get(self.what, self.what)} {span}: {self.detail[:300]}"


TITLES = {
    "unreachable": "API server unreachable",
    "not-ready": "API server not ready",
    "credentials-refused": "the kubeconfig's credentials refused",
    "error": "API server health unknown",
    "node-not-ready": "node not ready",
    "scheduler-down": "no kube-scheduler",
}


def _hms(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t))


def probe(k8s) -> tuple[bool, str, str]:
    """One ``GET /readyz?verbose`` through ``k8s`` (a :class:`conformance.k8s.client.K8s`), not retried:
    ``(ok, what, detail)`` as in the module docstring; never raises (the exception's text is the detail)."""
    try:
        status, text = _get(k8s, "/readyz?verbose=true")
    except Exception as exc:  # noqa: BLE001 - urllib3 connection errors, timeouts: the server did not answer
        text = str(exc)
        why = "connection refused" if "Connection refused" in text else f"{type(exc).__name__}: {text[:200]}"
        why = f"no answer within {PROBE_TIMEOUT:.0f} s" if "timed out" in text else why
        why = "connection closed by the server" if "Connection aborted" in text else why
        return False, "unreachable", f"{why} ({getattr(k8s, 'host', '?')})"
    if status == 200:
        return True, "ready", "/readyz ok"
    failed = "; ".join(line for line in text.splitlines() if line.startswith("[-]")) or text[:200]
    if status == 401:  # a 403 is a role without /readyz (a hardened cluster), not credentials gone
        message = re.search(r'"message":\s*"([^"]*)"', text)
        return False, "credentials-refused", f"HTTP {status} {message.group(1) if message else failed[:100]}"
    return False, "not-ready" if status >= 500 else "error", f"HTTP {status} from /readyz: {failed[:300]}"


def _get(k8s, path: str, accept: str = "text/plain") -> tuple[int, str]:
    """One GET with the client's credentials, no urllib3 retries: ``(status, body text)``; raises on no answer."""
    method, url, headers, _, _ = k8s.api.param_serialize(
        "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    resp = k8s.api.rest_client.pool_manager.request(method, url, headers=headers, retries=False, timeout=PROBE_TIMEOUT)
    return resp.status, resp.data.decode(errors="replace")


class Watcher:
    """Polls :func:`probe` every ``interval`` seconds in a daemon thread and logs state changes to
    ``report_dir/cluster-health.jsonl``. :meth:`start` returns self; :meth:`stop` (idempotent, bounded by one
    probe) ends the thread and writes the last sample. ``probe_fn``: replaces :func:`probe` (unit tests).
    :attr:`unprobeable`: why nothing is watched (the first probe was not ready), ``""`` when watched.
    ``nodes``: the run's node names, whose Ready condition is sampled every ``node_health.EVERY`` ready API
    samples (conformance/k8s/node_health.py; none: no node samples); ``node_probe_fn(names)`` replaces
    ``node_health.probe`` (unit tests). The kube-scheduler's Lease is read every ``scheduler_health.EVERY`` ready
    API samples (conformance/k8s/scheduler_health.py) when there is a ``k8s`` client or ``scheduler_probe_fn()``
    (``(what, detail)`` or None: unit tests)."""

    def __init__(
        self,
        k8s,
        report_dir: Path,
        interval: float = INTERVAL,
        probe_fn=None,
        nodes=(),
        node_probe_fn=None,
        scheduler_probe_fn=None,
    ) -> None:
        from conformance.k8s import node_health, scheduler_health  # noqa: PLC0415 - they build on this module

        self.k8s, self.path, self.interval = k8s, Path(report_dir) / FILE, interval
        self._probe = probe_fn or (lambda: probe(self.k8s))
        self._nodes = sorted(set(nodes))
        self._node_probe = node_probe_fn or (lambda names: node_health.probe(self.k8s, names))
        self._node_entry, self._node_every = node_health.entry, node_health.EVERY
        self._node_runs: dict[str, int] = {}  # consecutive bad node samples per node
        self._node_last: dict[str, str] | None = None
        tracker = scheduler_health.LeaseTracker()
        own = (lambda: scheduler_health.probe(self.k8s, tracker)) if k8s is not None else None
        self._sched_probe, self._sched_entry = scheduler_probe_fn or own, scheduler_health.entry
        self._sched_every, self._sched_bad, self._sched_last = scheduler_health.EVERY, 0, ""
        self._count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: tuple[bool, str] | None = None
        self.samples: list[dict] = []  # what was logged, also when the file could not be written
        self.write_error = ""
        self.unprobeable = ""
        self._bad = 0  # consecutive bad samples

    def start(self) -> Watcher:
        """Probe once; when the answer is ``ready`` start the thread, else log one ``unprobeable`` entry and watch
        nothing (a /readyz this run cannot read is no outage: 403, 404 through a proxy, no answer)."""
        self.path.unlink(missing_ok=True)  # a reused --report-dir's earlier run: its samples are not this run's
        ok, what, detail = self._probe()
        for _ in range(START_TRIES - 1):  # a slow first answer is retried; a 403/404 is the cluster's setting
            if ok or what not in OUTAGE_KINDS:
                break
            time.sleep(self.interval)
            ok, what, detail = self._probe()
        if not ok:
            self.unprobeable = f"{what}: {detail}"
            self._log({"t": round(time.time(), 3), "ok": False, "what": UNPROBEABLE, "detail": self.unprobeable})
            return self
        self._last = (ok, what)
        self._log({"t": round(time.time(), 3), "ok": ok, "what": what, "detail": detail})
        self._thread = threading.Thread(target=self._loop, name="dra-cluster-health", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self, force: bool = False) -> None:
        """Probe once; log the result when the state changed, on the :data:`MIN_BAD`-th bad sample in a row (the
        outage confirmed), or when ``force``."""
        ok, what, detail = self._probe()
        self._bad = 0 if ok else self._bad + 1
        if force or self._last != (ok, what) or self._bad == MIN_BAD:
            self._last = (ok, what)
            self._log({"t": round(time.time(), 3), "ok": ok, "what": what, "detail": detail})
        self._count += 1
        if ok and self._nodes and (force or self._count % self._node_every == 1):
            self.sample_nodes(force)
        if ok and self._sched_probe is not None and (force or self._count % self._sched_every == 1):
            self.sample_scheduler(force)

    def sample_scheduler(self, force: bool = False) -> None:
        """Read the scheduler's Lease once; log the judgement when it changed, on the :data:`MIN_BAD`-th bad
        one in a row, or when ``force``. A read that got no answer is no sample."""
        got = self._sched_probe()
        if got is None:
            return
        what, detail = got
        self._sched_bad = self._sched_bad + 1 if what == "scheduler-down" else 0
        if force or what != self._sched_last or self._sched_bad == MIN_BAD:
            self._sched_last = what
            self._log(self._sched_entry(what, detail))

    def sample_nodes(self, force: bool = False) -> None:
        """List the run's nodes once (``node_health.probe``); log the sample when the set of bad nodes or a
        node's condition changed, on a node's :data:`MIN_BAD`-th bad sample in a row, or when ``force``. A list
        that got no answer is no sample."""
        bad = self._node_probe(self._nodes)
        if bad is None:
            return
        self._node_runs = {n: self._node_runs.get(n, 0) + 1 for n in bad}
        confirmed = any(runs == MIN_BAD for runs in self._node_runs.values())
        state = {n: why.split(" (")[0] for n, why in bad.items()}  # Ready=Unknown: not its message's wording
        if force or confirmed or state != self._node_last:
            self._node_last = state
            self._log(self._node_entry(bad))

    def _log(self, entry: dict) -> None:
        self.samples.append(entry)
        try:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
        except OSError as exc:  # ENOSPC on the report dir: keep it in memory, say so at stop
            self.write_error = f"{self.path}: {exc}"

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=PROBE_TIMEOUT + 2)
        self._thread = None
        self.sample(force=True)  # the state at the end: closes an outage that lasted until then


def read(report_dir: Path) -> list[dict]:
    """The samples of ``report_dir/cluster-health.jsonl`` (empty when there is none; unreadable lines skipped)."""
    path = Path(report_dir) / FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "t" in entry and "ok" in entry:
            out.append(entry)
    return sorted(out, key=lambda e: e["t"])


def unprobeable(samples: list[dict]) -> str:
    """Why the run's cluster health was not watched (its ``unprobeable`` entry's detail), ``""`` when it was."""
    return next((str(e.get("detail", "")) for e in samples if e.get("what") == UNPROBEABLE), "")


def outages(samples: list[dict]) -> list[Outage]:
    """The windows in which the samples (as :func:`read` returns) say the API server did not serve: runs of at
    least :data:`MIN_BAD` bad samples (:data:`OUTAGE_KINDS`) after a ``ready`` one. None for an unprobeable run;
    a sample of another class (``error``: a 403, a 404) ends a window and is no outage itself."""
    if unprobeable(samples):
        return []
    samples = [e for e in samples if not e.get("scope")]  # node, scheduler samples: node_/scheduler_health.py
    found: list[Outage] = []
    window: list[dict] = []
    seen_ready = False
    for entry in samples:
        if not entry["ok"] and entry.get("what") in OUTAGE_KINDS and seen_ready:
            window.append(entry)
            continue
        seen_ready = seen_ready or bool(entry["ok"])
        if len(window) >= MIN_BAD:
            found.append(_outage(window, entry["t"]))
        window = []
    if len(window) >= MIN_BAD:
        found.append(_outage(window, samples[-1]["t"]))
    return found


def _outage(window: list[dict], end: float) -> Outage:
    """One outage from its failing samples: the first one's class, and the first detail of each class seen
    (``no answer within 3 s; then HTTP 500 from /readyz: [-]etcd failed``)."""
    details: dict[str, str] = {}
    for entry in window:
        details.setdefault(str(entry.get("what")), str(entry.get("detail", "")))
    return Outage(window[0]["t"], end, str(window[0].get("what")), "; then ".join(details.values()), tuple(details))


def follow(report_dir: Path | None) -> None:
    """Make :func:`down_evidence` read ``report_dir``'s health log in this process (``None``: read nothing, the
    default; then API calls are resent by attempts alone). Called by the run's owner once its watcher runs and
    by each xdist worker when it attaches (the watcher lives in the owner; the log is how workers see it)."""
    global _followed  # noqa: PLW0603 - one log per process, set at session start
    _followed = Path(report_dir) / FILE if report_dir is not None else None


def followed() -> Path | None:
    """The health log this process follows (:func:`follow`), None when none."""
    return _followed


def open_outage(samples: list[dict]) -> Outage | None:
    """The outage the samples (as :func:`read` returns) end in, still open (its last sample bad and confirmed:
    :data:`MIN_BAD` bad samples after a ready one); None when the API server's last sample was not a confirmed
    outage."""
    samples = [e for e in samples if not e.get("scope")]
    if not samples or samples[-1]["ok"] or samples[-1].get("what") not in OUTAGE_KINDS:
        return None
    found = outages(samples)
    return found[-1] if found and found[-1].end == samples[-1]["t"] else None


def down_evidence(bound: float, now: float | None = None) -> str:
    """Evidence that the API server has been down longer than ``bound`` seconds, from the followed log
    (:func:`follow`): ``"API server unreachable since 19:11:47 UTC (75 s, health watcher): no answer within 3 s"``;
    ``""`` when no log is followed, it cannot be read, or it shows no open outage that long (then the caller
    resends as usual). Never raises."""
    if _followed is None:
        return ""
    try:
        outage = open_outage(read(_followed.parent))
    except OSError:
        return ""
    now = time.time() if now is None else now
    if outage is None or now - outage.start < bound:
        return ""
    title = TITLES.get(outage.what, outage.what)
    return f"{title} since {_hms(outage.start)} UTC ({now - outage.start:.0f} s, health watcher): {outage.detail[:300]}"
