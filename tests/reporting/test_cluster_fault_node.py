"""A node cut off is a fault of the cluster (issue 27 §2): the health watcher samples the run's nodes' Ready
condition (conformance/k8s/node_health.py), a test that failed while one was not Ready (or within the grace after)
ends ``ERROR (cluster)`` with evidence naming the node, a pod wait on a node down past the bound ends early.

Real summaries built from hand-written Allure results and a cluster-health.jsonl as the run's watcher writes it
(node samples recorded from the s12 node-network-cut run); the node list parsing on real Node JSON.
"""

from __future__ import annotations

import json
import time

import pytest

from conformance.core import timeouts
from conformance.core.objects import Obj
from conformance.k8s import health, node_health
from conformance.k8s.waits import pods
from conformance.reporting import classify, cluster_fault, summary
from tests.reporting.test_cluster_fault import T0, _run

UNKNOWN = "Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)"
READY = {"t": T0, "ok": True, "what": "ready", "detail": "/readyz ok"}


def _api_ready(at: float) -> dict:
    return {**READY, "t": T0 + at}


def _nodes(at: float, bad: dict[str, str]) -> dict:
    return node_health.entry(bad, now=T0 + at)


def _cut(start: float, end: float, node: str = "n1") -> list[dict]:
    """The log of a node cut off from ``start`` to ``end`` (s after T0): as the watcher logs it (change, the
    confirming second sample, ready again), the API server ready all along."""
    return [
        READY,
        _nodes(1, {}),
        _nodes(start, {node: UNKNOWN}),
        _nodes(start + 5, {node: UNKNOWN}),
        _nodes(end, {}),
        _api_ready(end + 30),
    ]


def _node(name: str, status: str | None, reason: str = "", message: str = "") -> dict:
    conditions = [] if status is None else [{"type": "Ready", "status": status, "reason": reason, "message": message}]
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "MemoryPressure"}, *conditions]}}


def test_the_node_probe_names_each_of_the_runs_nodes_not_ready(monkeypatch):
    items = [
        _node("a", "True", "KubeletReady"),
        _node("b", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        _node("c", "False", "KubeletNotReady", "container runtime network not ready"),
        _node("d", None),
        _node("not-ours", "Unknown"),
    ]
    asked = []
    monkeypatch.setattr(
        health, "_get", lambda k8s, path, accept: asked.append(path) or (200, json.dumps({"items": items}))
    )
    bad = node_health.probe(None, ["a", "b", "c", "d", "gone"])
    assert asked == ["/api/v1/nodes?resourceVersion=0"], asked  # one list from the watch cache
    assert bad == {
        "b": UNKNOWN,
        "c": "Ready=False (KubeletNotReady: container runtime network not ready)",
        "d": "no Ready condition",
        "gone": "not in the node list (deleted)",
    }, bad
    monkeypatch.setattr(health, "_get", lambda *a, **k: (_ for _ in ()).throw(TimeoutError("timed out")))
    assert node_health.probe(None, ["a"]) is None  # no answer: no sample, no outage


def test_the_watcher_logs_node_changes_and_the_confirming_sample_only(tmp_path):
    states = iter([{}, {}, {"n1": UNKNOWN}, {"n1": UNKNOWN}, {"n1": UNKNOWN}, {"n1": UNKNOWN}, {}])
    w = health.Watcher(None, tmp_path, probe_fn=lambda: (True, "ready", "ok"), nodes=["n1"],
                       node_probe_fn=lambda names: next(states))  # fmt: skip
    for _ in range(7 * node_health.EVERY):
        w.sample()  # a node list every EVERY API samples
    logged = [(e["what"], sorted(e["nodes"])) for e in health.read(tmp_path) if node_health.is_node(e)]
    assert logged == [
        ("nodes-ready", []),
        ("node-not-ready", ["n1"]),
        ("node-not-ready", ["n1"]),
        ("nodes-ready", []),
    ], logged
    assert health.outages(health.read(tmp_path)) == []  # node samples are no API server outage
    (outage,) = node_health.outages(health.read(tmp_path))
    assert outage.node == "n1" and outage.text().startswith("node not ready "), outage
    assert outage.text().endswith(f"node n1: {UNKNOWN}"), outage.text()


def test_a_one_sample_node_blip_is_no_outage_and_an_unwatched_node_none():
    blip = [READY, _nodes(1, {}), _nodes(60, {"n1": "Ready=False (KubeletNotReady: PLEG)"}), _nodes(65, {})]
    assert node_health.outages(blip) == []
    assert [o.node for o in node_health.outages(_cut(60, 400))] == ["n1"]


def test_a_test_that_timed_out_on_a_node_cut_off_is_error_cluster_naming_the_node(tmp_path):
    # s12 node-network-cut: the pod scheduled, its kubelet cut off, WaitTimeout after 300 s; the API stayed ready
    message = "WaitTimeout: pod t-1/p-1 Running not reached within 300 s"
    run = _run(tmp_path, _cut(45, 320), [("test_a", "broken", T0 + 1, T0 + 330, message, "infrastructure")])
    data = summary.build(run)
    assert data["verdictLine"].startswith("ERROR (cluster) — node not ready "), data["verdictLine"]
    assert f"node n1: {UNKNOWN}" in data["verdictLine"] and "the driver is not judged" in data["verdictLine"]
    assert data["tests"][0]["failureClass"] == classify.INFRASTRUCTURE, data["tests"][0]
    assert data["clusterFault"]["tests"][0]["evidence"].startswith("node not ready "), data["clusterFault"]


def test_a_failure_long_after_the_node_came_back_or_before_it_went_stays_fail(tmp_path):
    late = T0 + 320 + cluster_fault.grace() + 30
    before = ("test_b", "failed", T0 + 1, T0 + 20, "AssertionError: device not visible", "driver-defect")
    after = ("test_c", "failed", T0 + 330, late, "AssertionError: device not visible", "driver-defect")
    data = summary.build(_run(tmp_path, [*_cut(45, 320), _api_ready(late + 5)], [before, after]))
    assert data["verdictLine"] == "FAIL", data["verdictLine"]
    assert data["clusterFault"]["outages"][0].startswith("node not ready "), data["clusterFault"]
    assert len(data["clusterFault"]["unexplained"]) == 2, data["clusterFault"]


def test_a_node_outage_never_excuses_a_test_that_reboots_the_node_itself(tmp_path):
    run = _run(tmp_path, _cut(45, 320), [("test_r", "failed", T0 + 1, T0 + 330, "pod not running again", "")])
    doc = json.loads((run / "allure-results" / "test_r-result.json").read_text())
    doc["labels"] += [{"name": "feature", "value": "node_access"}, {"name": "feature", "value": "node_reboot"}]
    (run / "allure-results" / "test_r-result.json").write_text(json.dumps(doc))
    data = summary.build(run)
    assert data["verdictLine"] == "FAIL" and data["clusterFault"]["unexplained"], data["clusterFault"]


def test_an_unwatched_run_attributes_no_node_outage(tmp_path):
    unprobeable = {"t": T0, "ok": False, "what": health.UNPROBEABLE, "detail": "error: HTTP 403"}
    log = [unprobeable, *_cut(45, 320)[1:]]
    assert cluster_fault.observed(log) == []


@pytest.fixture
def followed(tmp_path):
    health.follow(tmp_path)
    yield lambda samples: (tmp_path / health.FILE).write_text("".join(json.dumps(s) + "\n" for s in samples))
    health.follow(None)


def test_down_evidence_names_an_open_node_outage_past_the_bound_only(followed):
    followed(_cut(45, 320)[:4])  # n1 down since T0+45, still open
    assert node_health.down_evidence("n1", 60, now=T0 + 100) == ""  # 55 s: under the bound
    got = node_health.down_evidence("n1", 60, now=T0 + 110)
    assert got.startswith("node n1 not Ready since ") and got.endswith(f"(65 s, health watcher): {UNKNOWN}"), got
    assert node_health.down_evidence("n2", 60, now=T0 + 110) == ""
    followed(_cut(45, 320))  # Ready again
    assert node_health.down_evidence("n1", 60, now=T0 + 400) == ""


def test_a_pod_wait_ends_once_its_node_is_down_past_the_bound(followed, monkeypatch):
    monkeypatch.setattr(timeouts, "_scale", 1.0)
    pod = Obj({"metadata": {"name": "p", "namespace": "t"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Pending"}})
    ago = time.time() - T0 - node_health.DOWN_BOUND_S - 20  # a cut that began the bound + 10 s ago
    followed([{**s, "t": s["t"] + ago} for s in _cut(10, 10_000)[:4]])
    got = pods._pod_failed(False)(pod, [])
    assert got.startswith("the pod's node is down: node n1 not Ready since "), got
    unscheduled = Obj({"metadata": {"name": "p", "namespace": "t"}, "spec": {}, "status": {"phase": "Pending"}})
    assert pods._pod_failed(False)(unscheduled, []) is None
    followed([{**s, "t": s["t"] + ago} for s in _cut(10, 20)])  # Ready again
    assert pods._pod_failed(False)(pod, []) is None


def test_a_pod_wait_ends_once_the_runtime_keeps_refusing_its_container_over_nri_or_cdi():
    waiting = {"state": {"waiting": {"reason": "CreateContainerError"}}}
    running = {"state": {"running": {"startedAt": "2026-12-06T00:00:00Z"}}}

    def failed(message, count, status=waiting):
        pod = Obj({"metadata": {"name": "p", "namespace": "t"}, "spec": {}, "status": {"containerStatuses": [status]}})
        event = {"reason": "Failed", "count": count, "message": message, "involvedObject": {"kind": "Pod", "name": "p"}}
        return pods._pod_failed(False)(pod, [Obj(event)])

    nri = 'Error: failed to create containerd container: failed to get NRI adjustment for container: claimUID "u" bound'
    got = failed(nri, 11)
    assert got.startswith("the container runtime refused the pod's container over the driver's CDI/NRI: "), got
    assert "claimUID" in got and "(x11)" in got
    assert failed(nri, 2) is None  # a retry or two is a start-up race, not the answer
    assert failed(nri, 11, running) is None  # past refusals of a container running now (breaker s13 B6)
    cdi = "Error: failed to create containerd container: CDI device injection failed: unresolvable CDI devices x/y=z"
    assert failed(cdi, 3) is not None
    # once is enough for CDI, also for a container running now: containerd refreshes its CDI registry before every
    # injection, so the driver answered before its spec was on the node (breaker s14 B7)
    assert failed(cdi, 1) is not None and failed(cdi, 1, running) is not None
    pod = Obj({"metadata": {"name": "p", "namespace": "t"}, "spec": {}, "status": {"containerStatuses": [running]}})
    event = Obj({"reason": "Failed", "count": 1, "message": cdi, "involvedObject": {"kind": "Pod", "name": "p"}})
    assert pods._pod_failed(True)(pod, [event]) is None  # a restart test's allowed errors waive it
    other_nri = "Error: failed to create containerd container: failed to get NRI adjustment: topology plugin timed out"
    assert failed(other_nri, 5) is None  # another NRI plugin's trouble is not the driver's (B5)
    assert failed("Error: ErrImagePull", 5) is None  # an image pull is not the driver's
