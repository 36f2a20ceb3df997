"""One workload, timed from watch events: create the namespace and claim objects, create the pods (8
parallel writers; each pod's creation time is taken just before its POST), and record, from watch streams on
pods and ResourceClaims started before the first create, when each pod's claim got ``status.allocation`` and
when the pod got ``spec.nodeName`` (bound). Times are this process's monotonic clock at event receipt (object
timestamps have one-second resolution). Then the namespace is deleted and awaited, so the devices are free.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from urllib3.exceptions import HTTPError as TransportError

from conformance.core import errors
from conformance.k8s.client import K8s
from conformance_tools.bench import stats, workload
from conformance_tools.bench.config import CLASSIC

WRITERS = 8
Progress = Callable[[str], None]


class _Watcher(threading.Thread):
    """Watches ``kind`` in ``namespace`` from ``rv``, calling ``handle(obj, now)`` per event, until stopped."""

    def __init__(self, k8s: K8s, kind: str, namespace: str, rv: str, handle) -> None:
        super().__init__(name=f"watch-{kind}", daemon=True)
        self.k8s, self.kind, self.namespace, self.rv, self.handle = k8s, kind, namespace, rv, handle
        self.stopped = threading.Event()
        self.error = ""

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                for kind, obj in self.k8s.watch(self.kind, self.namespace, resource_version=self.rv, timeout_seconds=5):
                    self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
                    if kind in ("ADDED", "MODIFIED"):
                        self.handle(obj, time.monotonic())
                    if self.stopped.is_set():
                        return
            except errors.Gone:  # too old: re-list (late, but nothing is lost)
                listed = self.k8s.list_with_version(self.kind, self.namespace)
                self.rv = listed[1]
                for obj in listed[0]:
                    self.handle(obj.raw, time.monotonic())
            except Exception as exc:  # noqa: BLE001 - connection dropped: resume from the last version
                self.error = str(exc)[:300]
                self.stopped.wait(0.2)


class _Timings:
    """First-seen times per pod: claim allocated, pod bound."""

    def __init__(self, share: int) -> None:
        self.share = share
        self.bound: dict[str, float] = {}
        self.allocated: dict[str, float] = {}
        self.shared_allocated: dict[int, float] = {}
        self.lock = threading.Lock()

    def on_pod(self, obj: dict, now: float) -> None:
        name = obj["metadata"]["name"]
        if obj.get("spec", {}).get("nodeName") and name not in self.bound:
            with self.lock:
                self.bound.setdefault(name, now)

    def on_claim(self, obj: dict, now: float) -> None:
        if not (obj.get("status") or {}).get("allocation"):
            return
        name = obj["metadata"]["name"]
        with self.lock:
            if name.startswith("shared-"):
                self.shared_allocated.setdefault(int(name.split("-", 1)[1]), now)
                return
            owners = [o["name"] for o in obj["metadata"].get("ownerReferences") or [] if o.get("kind") == "Pod"]
            for owner in owners:
                self.allocated.setdefault(owner, now)

    def allocated_at(self, pod: str) -> float | None:
        if self.shared_allocated:
            return self.shared_allocated.get(int(pod.split("-", 1)[1]) // self.share)
        return self.allocated.get(pod)


def _wait_default_sa(k8s: K8s, ns: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not k8s.exists("ServiceAccount", "default", ns):
        if time.monotonic() > deadline:
            raise errors.WaitTimeout(f"ServiceAccount {ns}/default", timeout, "not created")
        time.sleep(0.2)


def run_workload(
    k8s: K8s,
    *,
    variant: str,
    ns: str,
    bench_id: str,
    driver: str,
    image: str,
    pods: int,
    share: int,
    timeout: float,
    stop: threading.Event,
    selector: str = "",
) -> dict:
    """Run ``pods`` pods of ``variant`` in a fresh namespace ``ns``; returns the measurements (JSON-able):
    pods, bound, wall/create seconds, throughput (pods/s), latency summaries (seconds) from creation to claim
    allocated (None for classic) and to bound, and why the first unbound pod is pending. Raises
    KeyboardInterrupt when ``stop`` is set mid-way (the caller cleans up). ``selector``: the ``cel`` variant's
    CEL expression (:func:`workload.claim_spec`)."""
    k8s.create(workload.namespace(ns, bench_id))
    _wait_default_sa(k8s, ns)
    for obj in workload.claim_objects(variant, driver, pods, share, selector):
        k8s.create(obj, namespace=ns)
    timings = _Timings(share)
    watchers = [_Watcher(k8s, "Pod", ns, k8s.list_with_version("Pod", ns)[1], timings.on_pod)]
    if variant != CLASSIC:
        rv = k8s.list_with_version("ResourceClaim", ns)[1]
        watchers.append(_Watcher(k8s, "ResourceClaim", ns, rv, timings.on_claim))
    for w in watchers:
        w.start()
    created: dict[str, float] = {}

    def create(i: int) -> None:
        if stop.is_set():
            return
        obj = workload.pod(variant, i, image, share)
        created[obj["metadata"]["name"]] = time.monotonic()
        k8s.create(obj, namespace=ns)

    t0 = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="create")
    try:
        try:
            list(pool.map(create, range(pods)))
        except BaseException:  # Ctrl-C: queued creates are dropped, the running ones end quickly
            stop.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        create_s = time.monotonic() - t0
        while len(timings.bound) < pods and time.monotonic() - t0 < timeout and not stop.is_set():
            time.sleep(0.1)
        if stop.is_set():
            raise KeyboardInterrupt
        time.sleep(0.3 if variant == CLASSIC else 1.0)  # late claim events of the last pods
    finally:
        for w in watchers:
            w.stopped.set()
    wall_s = time.monotonic() - t0
    bound = {p: t - created[p] for p, t in timings.bound.items() if p in created}
    allocated = {}
    for p in created:
        at = timings.allocated_at(p)
        if at is not None:
            allocated[p] = max(0.0, at - created[p])
    pending = sorted(set(created) - set(timings.bound), key=lambda n: int(n.split("-")[1]))
    return {
        "variant": variant,
        "pods": pods,
        "bound": len(bound),
        "wall_s": round(wall_s, 2),
        "create_s": round(create_s, 2),
        "throughput_pods_per_s": stats.throughput(list(created.values()), [timings.bound[p] for p in bound]),
        "latency_s": {
            "claim_allocated": None if variant == CLASSIC else stats.summary(list(allocated.values())),
            "pod_bound": stats.summary(list(bound.values())),
        },
        "pending": {"count": len(pending), "first": pending[0], "reason": _why(k8s, ns, pending[0])}
        if pending
        else None,
        "watch_errors": [w.error for w in watchers if w.error],
    }


def _why(k8s: K8s, ns: str, pod: str) -> str:
    try:
        conds = k8s.get("Pod", pod, ns).raw.get("status", {}).get("conditions") or []
    except errors.ApiError as exc:
        return f"unreadable: {exc}"[:300]
    sched = [c for c in conds if c.get("type") == "PodScheduled"]
    return (sched[0].get("message") or sched[0].get("reason") or "")[:300] if sched else "not yet seen by the scheduler"


def delete_namespace(k8s: K8s, ns: str, timeout: float = 300.0, progress: Progress = lambda s: None) -> float:
    """Delete ``ns`` (its pods first, with grace 0) and wait until it is gone; returns seconds taken. Raises
    WaitTimeout naming the namespace when it outlives ``timeout``."""
    t0 = time.monotonic()
    try:
        try:
            k8s.request("DELETE", f"/api/v1/namespaces/{ns}/pods", query={"gracePeriodSeconds": "0"})
        except TransportError as exc:  # a collection of 800 pods can outlast the read timeout; the server goes on
            progress(f"deleting the pods of {ns} outlasted the client's read timeout ({type(exc).__name__}): waiting")
        k8s.delete("Namespace", ns)
    except errors.NotFound:
        return 0.0
    while k8s.exists("Namespace", ns):
        if time.monotonic() - t0 > timeout:
            raise errors.WaitTimeout(f"namespace {ns} deleted", timeout, "still terminating")
        time.sleep(0.5)
    return time.monotonic() - t0
