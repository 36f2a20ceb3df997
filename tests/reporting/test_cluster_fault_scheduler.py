"""A dead kube-scheduler is a fault of the cluster (issue 27 §2; two scheduler panics in session 13 ended as 300 s
pod-wait timeouts, class infrastructure, nothing naming the scheduler): the health watcher judges the scheduler's
Lease kube-system/kube-scheduler (conformance/k8s/scheduler_health.py), a pod no scheduler places while none leads
ends its wait early, and the failure is ``ERROR (cluster)`` naming the Lease; where the Lease cannot be read the
timeout says that whether a scheduler runs could not be known.

Real summaries from hand-written Allure results and a cluster-health.jsonl as the watcher writes it; Lease JSON as
the API server serves it (coordination.k8s.io/v1).
"""

from __future__ import annotations

import json
import time

import pytest

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.k8s import health, scheduler_health
from conformance.k8s.waits import pods
from conformance.reporting import classify, summary
from tests.reporting.test_cluster_fault import T0, _run

READY = {"t": T0, "ok": True, "what": "ready", "detail": "/readyz ok"}
HOLDER = "host_6f1c"
STALE = f"Lease kube-system/kube-scheduler held by {HOLDER} not renewed for 21 s (renewTime R, leaseDurationSeconds 15)"


def _lease(holder: str | None, renew: str, duration: int = 15) -> str:
    spec = {"leaseDurationSeconds": duration, "renewTime": renew, **({"holderIdentity": holder} if holder else {})}
    meta = {"name": "kube-scheduler", "namespace": "kube-system"}
    return json.dumps({"kind": "Lease", "metadata": meta, "spec": spec})


def _sched(at: float, what: str, detail: str = "") -> dict:
    return scheduler_health.entry(what, detail or what, now=T0 + at)


def _dead(start: float, end: float) -> list[dict]:
    """The log of a scheduler that stopped leading at ``start`` (s after T0) and led again at ``end``."""
    return [
        READY,
        _sched(1, scheduler_health.GOOD),
        _sched(start, scheduler_health.BAD, STALE),
        _sched(start + 5, scheduler_health.BAD, STALE),
        _sched(end, scheduler_health.GOOD),
        {**READY, "t": T0 + end + 30},
    ]


def test_the_lease_judgement_renewing_released_stale_and_unreadable():
    tracker = scheduler_health.LeaseTracker()
    assert tracker.judge(200, _lease(HOLDER, "r1"), 0.0)[0] == scheduler_health.GOOD
    assert tracker.judge(200, _lease(HOLDER, "r2"), 14.0)[0] == scheduler_health.GOOD  # renewed: judged again
    assert tracker.judge(200, _lease(HOLDER, "r2"), 34.0)[0] == scheduler_health.GOOD  # 20 s = 15 + slack: not yet
    what, detail = tracker.judge(200, _lease(HOLDER, "r2"), 35.0)
    assert what == scheduler_health.BAD and detail.startswith(f"Lease kube-system/kube-scheduler held by {HOLDER} "
                                                              "not renewed for 21 s (renewTime r2"), detail  # fmt: skip
    assert tracker.judge(200, _lease(HOLDER, "r3"), 36.0)[0] == scheduler_health.GOOD  # a new leader renewed it
    # a leader told to stop releases it (client-go release(): holder emptied, leaseDurationSeconds 1)
    what, detail = tracker.judge(200, _lease(None, "r4", duration=1), 37.0)
    assert what == scheduler_health.BAD and "has no holder (released at r4" in detail, detail
    # nothing is guessed where the Lease cannot be read
    what, detail = tracker.judge(404, "{}", 40.0)
    assert what == scheduler_health.UNKNOWN and "runs without leader election" in detail, detail
    what, detail = tracker.judge(403, "forbidden", 41.0)
    assert what == scheduler_health.UNKNOWN and "HTTP 403" in detail and "grant get" in detail, detail


def test_the_watcher_logs_scheduler_changes_and_the_confirming_sample(tmp_path):
    states = iter([(scheduler_health.GOOD, "ok"), None, *[(scheduler_health.BAD, STALE)] * 3,
                   (scheduler_health.GOOD, "ok")])  # fmt: skip
    w = health.Watcher(None, tmp_path, probe_fn=lambda: (True, "ready", "ok"), scheduler_probe_fn=lambda: next(states))
    for _ in range(6 * scheduler_health.EVERY):
        w.sample()  # a Lease read every EVERY API samples; None (no answer) is no sample
    logged = [e["what"] for e in health.read(tmp_path) if scheduler_health.is_scheduler(e)]
    assert logged == ["scheduler-leading", "scheduler-down", "scheduler-down", "scheduler-leading"], logged
    assert health.outages(health.read(tmp_path)) == []  # scheduler samples are no API server outage
    (outage,) = scheduler_health.outages(health.read(tmp_path))
    assert outage.text().startswith("no kube-scheduler ") and outage.text().endswith(STALE), outage.text()


def test_a_pod_wait_that_timed_out_while_no_scheduler_led_is_error_cluster(tmp_path):
    message = "WaitFailed: while waiting for pod t-1/p-1 Running: the pod is not scheduled and no kube-scheduler ..."
    run = _run(tmp_path, _dead(40, 200), [("test_a", "failed", T0 + 1, T0 + 120, message, "driver-defect")])
    data = summary.build(run)
    assert data["verdictLine"].startswith("ERROR (cluster) — no kube-scheduler "), data["verdictLine"]
    assert STALE in data["verdictLine"] and "the driver is not judged" in data["verdictLine"], data["verdictLine"]
    assert data["tests"][0]["failureClass"] == classify.INFRASTRUCTURE, data["tests"][0]
    assert data["tests"][0]["reason"].startswith("cluster fault: no kube-scheduler "), data["tests"][0]


def test_a_one_sample_blip_is_no_outage_and_a_failure_long_after_stays_fail(tmp_path):
    blip = [READY, _sched(1, "scheduler-leading"), _sched(60, "scheduler-down"), _sched(65, "scheduler-leading")]
    assert scheduler_health.outages(blip) == []
    late = ("test_b", "failed", T0 + 400, T0 + 500, "AssertionError: device not visible", "driver-defect")
    data = summary.build(_run(tmp_path, _dead(40, 100), [late]))
    assert data["verdictLine"] == "FAIL", data["verdictLine"]


@pytest.fixture
def followed(tmp_path):
    health.follow(tmp_path)
    yield lambda samples: (tmp_path / health.FILE).write_text("".join(json.dumps(s) + "\n" for s in samples))
    health.follow(None)


def _pod(node: str = "", conditions=()) -> Obj:
    spec = {"nodeName": node} if node else {}
    status = {"phase": "Pending", "conditions": list(conditions)}
    return Obj({"kind": "Pod", "metadata": {"name": "p", "namespace": "t"}, "spec": spec, "status": status})


def test_an_unscheduled_pods_wait_ends_once_no_scheduler_led_past_the_bound(followed, monkeypatch):
    monkeypatch.setattr(timeouts, "_scale", 1.0)
    ago = time.time() - T0 - scheduler_health.DOWN_BOUND_S - 10  # an outage that began the bound + 5 s ago
    followed([{**s, "t": s["t"] + ago} for s in _dead(5, 10_000)[:4]])
    got = pods._pod_failed(False)(_pod(), [])
    assert got.startswith("the pod is not scheduled and no kube-scheduler since "), got
    assert got.endswith(f"({scheduler_health.DOWN_BOUND_S + 5:.0f} s, health watcher): {STALE}"), got
    assert pods._pod_failed(False)(_pod("n1"), []) is None  # placed already: its kubelet goes on without one
    assert scheduler_health.down_evidence(scheduler_health.DOWN_BOUND_S * 2) == ""  # under a longer bound
    followed([{**s, "t": s["t"] + ago} for s in _dead(5, 20)])  # leading again
    assert pods._pod_failed(False)(_pod(), []) is None


class _OnePod:
    def __init__(self, pod: Obj) -> None:
        self.pod = pod

    def get(self, kind, name, namespace):
        return self.pod


def _timed_out(k8s) -> errors.WaitTimeout:
    with pytest.raises(errors.WaitTimeout) as got, pods._judged(k8s, _pod()):
        raise errors.WaitTimeout("pod t/p Running", 300, "phase Pending")
    return got.value


def test_a_timeout_of_a_pod_no_scheduler_acted_on_says_what_is_known_of_the_scheduler(followed):
    followed([READY, _sched(1, scheduler_health.UNKNOWN, "Lease kube-system/kube-scheduler not found: ...")])
    text = str(_timed_out(_OnePod(_pod())))
    assert "no scheduler acted on the pod (no node, no PodScheduled condition); whether a kube-scheduler runs " \
           "could not be known: Lease kube-system/kube-scheduler not found" in text, text  # fmt: skip
    followed([READY])
    assert "the run's health watcher read no scheduler Lease" in str(_timed_out(_OnePod(_pod())))
    # a pod the scheduler did look at (Unschedulable) or placed: the plain timeout, nothing added
    looked = _pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}])
    assert "no scheduler acted" not in str(_timed_out(_OnePod(looked)))
    assert "no scheduler acted" not in str(_timed_out(_OnePod(_pod("n1"))))


def test_a_pod_no_scheduler_acted_on_is_not_the_drivers(followed):
    """s16 breaker F1: docs/verdict.md promises nothing is guessed here, so the timeout is not the driver's."""
    followed([READY])
    assert _timed_out(_OnePod(_pod())).party == errors.CLUSTER
    assert _timed_out(_OnePod(_pod("n1"))).party == errors.DRIVER  # on its node: prepare and start are the driver's


def test_a_pod_waiting_on_its_binding_conditions_is_not_called_unscheduled(followed):
    """s16 breaker 3 #1: KEP-5007's wait leaves the pod with no node and no PodScheduled condition, only the
    scheduler's event: the scheduler acted, and the driver's binding conditions are what the pod waits on."""
    followed([READY])
    with pytest.raises(errors.WaitTimeout) as got, pods._judged(_OnePod(_pod()), _pod()):
        events = ["Normal BindingConditionsPending Pod/p: waiting for binding conditions of device gpu-0"]
        raise errors.WaitTimeout("pod t/p Running", 300, "phase Pending", events)
    assert got.value.party == errors.DRIVER and "no scheduler acted" not in str(got.value)
