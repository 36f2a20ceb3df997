"""``ERROR (cluster)`` only on what the harness observed, never on text a driver can write (s11 breaker findings
1-3): a driver's own "Connection refused", a /readyz the run cannot read, a one-probe blip inside a long wait and
an outage the test merely lived through all keep the verdict FAIL; a real outage the test failed in is ERROR.

Real summaries built from hand-written Allure results and a cluster-health.jsonl as the run's watcher writes it.
"""

from __future__ import annotations

import pytest

from conformance.k8s import health
from conformance.reporting import classify, cluster_fault, markdown, summary
from tests.reporting.test_cluster_fault import T0, _run

READY = {"t": T0, "ok": True, "what": "ready", "detail": "/readyz ok"}
WAIT_S = 300.0  # a pod_running wait of 5 minutes


def _down(at: float, n: int, what: str = "unreachable", detail: str = "connection refused (https://x)") -> list:
    """``n`` consecutive bad samples from ``at`` (one a second), then ready again."""
    bad = [{"t": T0 + at + i, "ok": False, "what": what, "detail": detail} for i in range(n)]
    return [*bad, {"t": T0 + at + n + 1, "ok": True, "what": "ready", "detail": "/readyz ok"}]


def _verdict(tmp_path, samples, message, start=1.0, stop=20.0) -> dict:
    run = _run(tmp_path, samples, [("test_a", "failed", T0 + start, T0 + stop, message, "driver-defect")])
    return summary.build(run)


DRIVER_SOCKET = (
    "conformance.node.draplugin.DraPluginError: NodePrepareResources on unix:///var/lib/kubelet/plugins/x/dra.sock: "
    "StatusCode.UNAVAILABLE failed to connect to all addresses; last error: UNKNOWN: unix:/var/lib/kubelet/plugins/"
    "x/dra.sock: connect failed: ... error: Connection refused"
)


# the kubelet event that ends waits.pod_running under the reference driver's fault prepare-connection-refused
PREPARE_EVENT = (
    "conformance.core.errors.WaitFailed: pod t-1/p-1: FailedPrepareDynamicResources: Failed to prepare dynamic "
    "resources: prepare dynamic resources: NodePrepareResources failed for ResourceClaim c-1: t-1/c-1: injected "
    "fault prepare-connection-refused: reading the claim failed: [Errno 111] Connection refused"
)


@pytest.mark.parametrize("message", [DRIVER_SOCKET, PREPARE_EVENT], ids=["stale-socket", "prepare-event"])
@pytest.mark.parametrize("samples", [[], [READY, {**READY, "t": T0 + 30}]], ids=["no-health-log", "healthy-log"])
def test_a_drivers_own_connection_refused_stays_fail(tmp_path, samples, message):
    data = _verdict(tmp_path, samples, message)
    assert data["verdictLine"] == "FAIL" and data["tests"][0]["failureClass"] == classify.DRIVER_DEFECT, data


def test_connection_refused_counts_with_an_overlapping_unreachable_outage(tmp_path):
    # the test ran on long after the API came back (beyond the grace), but it failed on the API's own refusal
    message = "urllib3.exceptions.MaxRetryError: ... [Errno 111] Connection refused"
    stop = 5 + 3 + cluster_fault.grace() + 60
    data = _verdict(tmp_path, [READY, *_down(5, 3)], message, stop=stop)
    assert data["verdictLine"].startswith("ERROR (cluster) — API server unreachable (connection refused)"), data
    other_kind = _verdict(tmp_path / "2", [READY, *_down(5, 3, "not-ready", "HTTP 500")], message, stop=stop)
    assert other_kind["verdictLine"] == "FAIL", other_kind["verdictLine"]


def test_readyz_403_at_the_start_attributes_nothing_and_says_so(tmp_path):
    forbidden = (False, "error", 'HTTP 403 from /readyz: {"message": "forbidden: User cannot get path /readyz"}')
    (tmp_path / health.FILE).write_text('{"t": 1, "ok": true, "what": "ready"}\n')  # a reused report dir
    w = health.Watcher(None, tmp_path, probe_fn=lambda: forbidden).start()
    assert w.unprobeable.startswith("error: HTTP 403") and w._thread is None, w.unprobeable
    w.stop()  # nothing started: nothing more logged
    logged = health.read(tmp_path)
    assert [e["what"] for e in logged] == [health.UNPROBEABLE] and health.outages(logged) == [], logged
    data = _verdict(tmp_path, logged, "AssertionError: device not visible in container", stop=4000)
    assert data["verdictLine"] == "FAIL", data["verdictLine"]
    assert data["clusterFault"]["unwatched"].startswith("cluster faults could not be watched"), data["clusterFault"]
    assert "cluster faults could not be watched (/readyz at the start: error: HTTP 403" in markdown.render(data)


def test_a_slow_first_probe_is_retried_before_the_run(tmp_path):
    states = iter([(False, "unreachable", "no answer within 3 s"), (True, "ready", "/readyz ok")])
    w = health.Watcher(None, tmp_path, interval=0.01, probe_fn=lambda: next(states, (True, "ready", "ok"))).start()
    w.stop()
    assert not w.unprobeable and health.read(tmp_path)[0]["what"] == "ready", health.read(tmp_path)


@pytest.mark.parametrize(("status", "what"), [(403, "error"), (404, "error"), (401, "credentials-refused")])
def test_only_401_among_4xx_is_a_bad_sample(monkeypatch, status, what):
    monkeypatch.setattr(health, "_get", lambda k8s, path: (status, '{"message": "nope"}'))
    ok, got, _ = health.probe(None)
    assert not ok and got == what and (got in health.OUTAGE_KINDS) == (status == 401), got


def test_no_outage_before_the_first_ready_sample_nor_from_4xx(tmp_path):
    proxy_404 = {"ok": False, "what": "error", "detail": "HTTP 404 from /readyz"}
    early = [{"t": T0 + i, "ok": False, "what": "unreachable", "detail": "x"} for i in range(5)]
    assert health.outages([*early, {**READY, "t": T0 + 6}]) == []
    steady_404 = [READY, *({**proxy_404, "t": T0 + i} for i in range(1, 100))]
    assert health.outages(steady_404) == []


def test_a_one_sample_blip_inside_a_five_minute_wait_stays_fail(tmp_path):
    data = _verdict(tmp_path, [READY, *_down(120, 1)], "WaitFailed: pod p not Running after 300s", stop=WAIT_S)
    assert health.outages([READY, *_down(120, 1)]) == []
    assert data["verdictLine"] == "FAIL" and data["clusterFault"] is None, data["clusterFault"]


def test_an_outage_the_test_lived_through_long_before_it_failed_stays_fail(tmp_path):
    # a real (3-sample) outage 2 min into a 5-min wait that then times out: the driver never prepared
    data = _verdict(tmp_path, [READY, *_down(60, 3)], "WaitFailed: pod p not Running after 300s", stop=WAIT_S)
    assert data["verdictLine"] == "FAIL", data["verdictLine"]
    assert data["clusterFault"]["outages"][0].startswith("API server unreachable"), data["clusterFault"]
    assert data["clusterFault"]["unexplained"] == ["suites/node/test_x.py::test_a"], data["clusterFault"]


def test_a_test_that_failed_in_a_real_outage_or_just_after_it_is_error_cluster(tmp_path):
    outage = [READY, *_down(60, 20)]  # 60..80 s down
    during = _verdict(tmp_path, outage, "WaitFailed: pod p Failed", stop=70)
    after = _verdict(tmp_path / "2", outage, "WaitFailed: pod p Failed", stop=80 + cluster_fault.grace() - 1)
    for data in (during, after):
        assert data["verdictLine"].startswith("ERROR (cluster) — API server unreachable "), data["verdictLine"]
        assert data["tests"][0]["failureClass"] == classify.INFRASTRUCTURE, data["tests"][0]


def test_the_grace_follows_the_timeout_scale(monkeypatch):
    from conformance.core import timeouts

    monkeypatch.setattr(timeouts, "_scale", 2.0)
    assert cluster_fault.grace() == 2 * cluster_fault.GRACE_S


def test_the_watcher_logs_the_second_bad_sample_in_a_row(tmp_path):
    states = iter([(True, "ready", "ok"), *[(False, "unreachable", "refused")] * 4, (True, "ready", "ok")])
    w = health.Watcher(None, tmp_path, probe_fn=lambda: next(states))
    for _ in range(6):
        w.sample()
    got = [e["what"] for e in health.read(tmp_path)]
    assert got == ["ready", "unreachable", "unreachable", "ready"], got
    assert len(health.outages(health.read(tmp_path))) == 1
