"""Whether a kube-scheduler is alive during a run (issue 27 §2: a dead scheduler is a fault of the cluster).

A kube-scheduler run with leader election (kubeadm's manifests set ``--leader-elect=true``, also the flag's
default) holds the Lease ``kube-system/kube-scheduler`` (``--leader-elect-resource-namespace`` /
``--leader-elect-resource-name`` defaults) and renews its ``spec.renewTime`` every ``--leader-elect-retry-period``
(2 s) while it leads; a leader that is told to stop releases it (``ReleaseOnCancel: true``: ``holderIdentity``
emptied, ``leaseDurationSeconds`` 1); one that crashes (a panic, SIGKILL) simply stops renewing it, and a standby
takes it over once ``leaseDurationSeconds`` (15 s) passed.

The health watcher (:class:`conformance.k8s.health.Watcher`) reads that Lease every :data:`EVERY` ready API samples
(one GET, never retried, bounded by ``health.PROBE_TIMEOUT``) through a :class:`LeaseTracker`, which judges it on
this process's own clock (no comparison of the API server's clock with ours): the scheduler is down
(:data:`BAD`) when the Lease has no holder, or when its ``renewTime`` has not changed for longer than its
``leaseDurationSeconds`` plus :data:`SLACK_S` since this run first saw that value. Samples go to the run's
``cluster-health.jsonl`` with ``"scope": "scheduler"``: ``{"t", "ok", "what": BAD|GOOD|UNKNOWN, "scope", "detail"}``,
logged on every change of ``what`` and on the :data:`health.MIN_BAD`-th bad sample in a row. A Lease that cannot be
read (404: the scheduler runs without leader election; 403: the run may not read it) is :data:`UNKNOWN`: nothing is
guessed, and a pod wait that times out says so (:func:`liveness_note`).

:func:`outages` turns the samples into :class:`~conformance.k8s.health.Outage` windows (``what`` :data:`BAD`),
which :mod:`conformance.reporting.cluster_fault` compares with failed tests like the API server's; a pod wait on
a pod no scheduler has placed ends early through :func:`down_evidence` (conformance/k8s/waits/pods.py).

Sources: coordination.k8s.io/v1 Lease (``spec.holderIdentity``, ``leaseDurationSeconds``, ``renewTime``);
kube-scheduler cmd/kube-scheduler/app/options/options.go (``ReleaseOnCancel: true``), pkg/scheduler/apis/config/v1
defaults (lock ``kube-system/kube-scheduler``), component-base LeaderElectionConfiguration defaults (15 s / 10 s /
2 s); client-go tools/leaderelection (``release()``); kubeadm cmd/kubeadm/app/phases/controlplane/manifests.go
(``leader-elect: "true"``).
"""

from __future__ import annotations

import json
import time

from conformance.k8s import health

SCOPE = "scheduler"
BAD = "scheduler-down"
GOOD = "scheduler-leading"
UNKNOWN = "scheduler-unknown"
LEASE = "kube-system/kube-scheduler"
PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
EVERY = 5  # API samples (health.INTERVAL s each) between two reads of the Lease: one read every ~5 s
SLACK_S = 5.0  # seconds beyond leaseDurationSeconds before a Lease not renewed counts (retry period 2 s, our reads)
DEFAULT_LEASE_S = 15  # leaseDurationSeconds when the Lease does not say (component-base default)
DOWN_BOUND_S = 15.0  # seconds (times --timeout-scale) of a confirmed scheduler outage before a pod wait ends


class LeaseTracker:
    """Judges successive reads of the scheduler's Lease (see the module docstring). :meth:`judge` takes one read
    (HTTP status, body text) and this process's monotonic time in seconds; returns ``(what, detail)``."""

    def __init__(self) -> None:
        self._renew: str | None = None
        self._since = 0.0  # monotonic time at which the current renewTime was first seen

    def judge(self, status: int, text: str, now: float) -> tuple[str, str]:
        """``(GOOD|BAD|UNKNOWN, detail)`` for one read of the Lease answered ``status`` with ``text``."""
        if status == 404:
            return UNKNOWN, (
                f"Lease {LEASE} not found: the kube-scheduler runs without leader election (kubeadm runs it with "
                "--leader-elect=true), so whether one runs cannot be known"
            )
        if status != 200:
            return UNKNOWN, f"GET Lease {LEASE} answered HTTP {status}: {text[:200]} (fix: grant get on it)"
        try:
            spec = json.loads(text).get("spec") or {}
        except (ValueError, AttributeError):
            return UNKNOWN, f"GET Lease {LEASE} answered no JSON: {text[:200]}"
        holder, renew = spec.get("holderIdentity") or "", str(spec.get("renewTime") or "")
        duration = int(spec.get("leaseDurationSeconds") or DEFAULT_LEASE_S)
        if renew != self._renew:
            self._renew, self._since = renew, now
        if not holder:
            return BAD, f"Lease {LEASE} has no holder (released at {renew or '?'}: its leader stopped)"
        idle = now - self._since
        if idle > duration + SLACK_S:
            return BAD, (
                f"Lease {LEASE} held by {holder} not renewed for {idle:.0f} s (renewTime {renew}, "
                f"leaseDurationSeconds {duration}): its leader stopped"
            )
        return GOOD, f"Lease {LEASE} held by {holder}, renewTime {renew}"


def probe(k8s, tracker: LeaseTracker) -> tuple[str, str] | None:
    """Read the Lease once through ``k8s`` (no retries) and judge it with ``tracker``; None when it got no answer
    (the API server's own probe covers that). Never raises."""
    try:
        status, text = health._get(k8s, PATH, accept="application/json")
    except Exception:  # noqa: BLE001 - no answer: no sample
        return None
    return tracker.judge(status, text, time.monotonic())


def entry(what: str, detail: str, now: float | None = None) -> dict:
    """The log line of one scheduler sample (see the module docstring)."""
    t = round(time.time() if now is None else now, 3)
    return {"t": t, "ok": what != BAD, "what": what, "scope": SCOPE, "detail": detail}


def is_scheduler(sample: dict) -> bool:
    """Whether a health-log sample is a scheduler sample (the API server's outages ignore those)."""
    return sample.get("scope") == SCOPE


def outages(samples: list[dict]) -> list[health.Outage]:
    """The windows of the scheduler samples in ``samples`` (as ``health.read`` returns) in which no scheduler led:
    from the first :data:`BAD` sample to the next scheduler sample that is not (or the log's last sample when the
    run ended first); only windows of at least ``health.MIN_BAD`` samples."""
    found: list[health.Outage] = []
    window: list[dict] = []
    for s in [s for s in samples if is_scheduler(s)]:
        if s.get("what") == BAD:
            window.append(s)
            continue
        if len(window) >= health.MIN_BAD:
            found.append(_outage(window, s["t"]))
        window = []
    if len(window) >= health.MIN_BAD:
        found.append(_outage(window, samples[-1]["t"]))
    return found


def _outage(window: list[dict], end: float) -> health.Outage:
    return health.Outage(window[0]["t"], end, BAD, str(window[-1].get("detail", "")), (BAD,))


def _followed_samples() -> list[dict] | None:
    path = health.followed()
    if path is None:
        return None
    try:
        return health.read(path.parent)
    except OSError:
        return None


def down_evidence(bound: float, now: float | None = None) -> str:
    """Evidence that no kube-scheduler has led for longer than ``bound`` seconds, from the followed health log
    (``health.follow``), the outage still open: ``"no kube-scheduler since 19:11:47 UTC (41 s, health watcher):
    Lease kube-system/kube-scheduler held by h_1 not renewed for 20 s ..."``; ``""`` when no log is followed, it
    cannot be read, or it shows no such outage. Never raises."""
    samples = _followed_samples()
    if not samples:
        return ""
    found = [o for o in outages(samples) if o.end == samples[-1]["t"]]
    last = next((s for s in reversed(samples) if is_scheduler(s)), None)
    now = time.time() if now is None else now
    if not found or last is None or last.get("what") != BAD or now - found[-1].start < bound:
        return ""
    o = found[-1]
    return f"no kube-scheduler since {health._hms(o.start)} UTC ({now - o.start:.0f} s, health watcher): {o.detail}"


def liveness_note() -> str:
    """What the followed health log knows of the scheduler, for a pod wait that saw no scheduler act on its pod:
    ``"whether a kube-scheduler runs could not be known: <why>"`` (no Lease read, or :data:`UNKNOWN`), or the
    last judgement (``"the health watcher last saw: Lease ... held by X, renewTime ..."``). Never raises."""
    samples = _followed_samples()
    last = next((s for s in reversed(samples or []) if is_scheduler(s)), None)
    if last is None:
        return "whether a kube-scheduler runs could not be known: the run's health watcher read no scheduler Lease"
    if last.get("what") == UNKNOWN:
        return f"whether a kube-scheduler runs could not be known: {last.get('detail', '')}"
    return f"the health watcher last saw ({health._hms(last['t'])} UTC): {last.get('detail', '')}"
