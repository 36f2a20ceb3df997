"""Heartbeat failures are not silent (breaker F7 of session 12; conformance/node/heartbeat.py): when the first
renewal cannot be written the helper pods are not used (the reason names the refusal and the fix), and once
renewals have failed for longer than half of ``stale`` every node-access call names the error, before the anchor
ends the helper pods (and its reaper deletes their namespace). Fake API objects; the clock is
``heartbeat.time.monotonic``."""

from __future__ import annotations

import pytest

from conformance.core.errors import Forbidden
from conformance.node import heartbeat
from conformance.node import helper_pod as hp
from conformance.node.base import NodeAccessUnavailable
from tests.harness.test_heartbeat import FakeK8s, StartK8s, _pod

REFUSED = Forbidden(403, "Forbidden", 'admission webhook "policy.example" denied the request: pods are immutable')


class Refusing(StartK8s):
    """Lists the anchor's pod; every PATCH is refused (a policy engine, a changed Role)."""

    def patch(self, kind, name, body, namespace):
        raise REFUSED


class Late(FakeK8s):
    """The Job controller creates the anchor pod only after ``late`` lists."""

    def __init__(self, pods, late: int) -> None:
        super().__init__(pods)
        self.late = late

    def list(self, kind, namespace, label_selector=""):
        pods = super().list(kind, namespace, label_selector)
        return [] if len(self.selectors) <= self.late else pods


def test_start_fails_when_the_first_beat_is_refused_and_names_the_refusal_and_the_fix():
    beat = heartbeat.Heartbeat(Refusing([_pod("anchor")]), "dra-node-access-r1", "u", interval=60, stale=120)
    with pytest.raises(heartbeat.HeartbeatFailed) as raised:
        beat.start(first_within=5)
    said = str(raised.value)
    assert said.startswith("the first heartbeat to the anchor Job's pod in dra-node-access-r1 failed: 403 Forbidden")
    assert "the anchor ends the helper pods after 120 s" in said and "`patch` of pods in dra-node-access-r1" in said
    assert beat._thread is None  # no renewal thread left behind


def test_start_waits_for_the_job_controller_to_create_the_anchor_pod():
    k8s = Late([_pod("anchor")], late=2)
    beat = heartbeat.Heartbeat(k8s, "ns", "u", interval=60)
    beat.start(first_within=10)
    beat.stop()
    assert beat.beats == 1 and len(k8s.selectors) == 3 and beat.error == "" and beat.failing_since is None


def test_helper_pods_are_not_used_when_their_heartbeat_cannot_be_written(monkeypatch):
    monkeypatch.setattr(hp.waits, "default_service_account", lambda *a, **k: None)
    monkeypatch.setattr(hp.waits, "pod_running", lambda *a, **k: None)
    access = hp.HelperPodNodeAccess(Refusing([_pod("anchor")]), ["n0"], "r1", deadline=3600, stale=120, interval=60)
    access.start()
    ok, why = access.probe()
    assert not ok and "the first heartbeat to the anchor Job's pod" in why and "403 Forbidden" in why, why


def test_check_names_the_error_only_after_half_of_stale_and_a_success_clears_it(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(heartbeat.time, "monotonic", lambda: now[0])
    k8s = FakeK8s([_pod("anchor")])
    beat = heartbeat.Heartbeat(k8s, "dra-node-access-r1", "u", interval=30, stale=300)
    beat.beat()
    k8s.fail = REFUSED
    beat.beat()  # the first failure: at 1000 s
    now[0] += 150
    beat.beat()
    beat.check()  # failing for 150 s of 300: not yet
    now[0] += 1
    with pytest.raises(NodeAccessUnavailable) as raised:
        beat.check()
    said = str(raised.value)
    assert said.startswith("the heartbeat to the anchor Job's pod in dra-node-access-r1 has failed for 151 s")
    assert "(last error: 403 Forbidden: admission webhook" in said and "after 300 s without one" in said, said
    k8s.fail = None
    beat.beat()
    beat.check()
    assert beat.failing_since is None


def test_node_access_calls_name_a_heartbeat_failing_for_half_of_stale(monkeypatch):
    monkeypatch.setattr(hp.waits, "default_service_account", lambda *a, **k: None)
    monkeypatch.setattr(hp.waits, "pod_running", lambda *a, **k: None)
    access = hp.HelperPodNodeAccess(StartK8s([_pod("anchor")]), ["n0"], "r1", deadline=3600, stale=120, interval=60)
    access.start()
    access.heartbeat.stop()
    access.heartbeat._failed("403 Forbidden: pods is forbidden")
    access.heartbeat.failing_since -= 61
    with pytest.raises(NodeAccessUnavailable, match=r"has failed for 61 s \(last error: 403 Forbidden: pods is"):
        access.plugin_sockets("n0")  # before any exec


def test_an_anchor_pod_that_never_comes_is_no_refusal_and_node_access_goes_on(monkeypatch):
    """No anchor pod (e.g. admission refuses it): nothing counts down, the helper pods end at their deadline
    (anchor_problem says so at start-up), so neither start() nor node-access calls fail over it."""
    now = [1000.0]
    k8s = FakeK8s([])
    beat = heartbeat.Heartbeat(k8s, "ns", "u", interval=60, stale=120)
    beat.start(first_within=1.5)
    beat.stop()
    monkeypatch.setattr(heartbeat.time, "monotonic", lambda: now[0])
    now[0] += 10_000
    beat.check()
    assert beat.beats == 0 and beat.error.startswith(heartbeat.NO_POD) and beat.failing_since is None
