"""Unit tests of the bound on resending API requests during a cluster outage (issue 27 §2, conformance/k8s/retries.py
and health.py ``down_evidence``): a transient failure is resent as before while the health watcher's log shows the
API server ready or only briefly down, and is not resent once the log shows a confirmed outage older than
``health.DOWN_BOUND_S`` times the timeout scale; the call then fails with ClusterUnavailable naming the outage.
The health log is written as the run's watcher writes it; no sleeps (backoff waits are patched out)."""

from __future__ import annotations

import json
import time

import pytest
import urllib3
from tenacity import wait_none

from conformance.core import errors, timeouts
from conformance.k8s import health, retries


@pytest.fixture
def followed(tmp_path):
    """A report dir whose health log this process follows; write(samples) replaces the log."""
    health.follow(tmp_path)
    yield lambda samples: (tmp_path / health.FILE).write_text("".join(json.dumps(s) + "\n" for s in samples))
    health.follow(None)


def _down_since(start: float) -> list[dict]:
    """A watcher log: ready, then a confirmed outage (two bad samples) that began at ``start`` and is still open."""
    return [
        {"t": start - 30, "ok": True, "what": "ready", "detail": "/readyz ok"},
        {"t": start, "ok": False, "what": "unreachable", "detail": "no answer within 3 s (https://1.2.3.4:6443)"},
        {"t": start + 1, "ok": False, "what": "unreachable", "detail": "no answer within 3 s (https://1.2.3.4:6443)"},
    ]


def _timing_out(calls: list[float]):
    """A retried call that always fails as a request to a server with etcd stopped does (read timeout)."""

    @retries.retry_transient
    def call():
        calls.append(time.time())
        raise urllib3.exceptions.ReadTimeoutError(None, "/api/v1/namespaces", "Read timed out. (read timeout=30)")

    call.retry.wait = wait_none()  # the policy's stop and give-up, without its backoff pauses
    return call


def test_a_request_is_resent_six_times_when_nothing_is_watched():
    health.follow(None)
    calls: list[float] = []
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        _timing_out(calls)()
    assert len(calls) == 6


def test_a_short_outage_is_resent_as_before(followed):
    followed(_down_since(time.time() - 10))  # down 10 s: under the 60 s bound
    calls: list[float] = []
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        _timing_out(calls)()
    assert len(calls) == 6


def test_an_outage_past_the_bound_ends_the_call_with_its_evidence(followed):
    followed(_down_since(time.time() - health.DOWN_BOUND_S - 15))
    calls: list[float] = []
    with pytest.raises(errors.ClusterUnavailable) as err:
        _timing_out(calls)()
    assert len(calls) == 1, "not resent once the API server has been down past the bound"
    text = str(err.value)
    assert text.startswith("API server unreachable since ") and "health watcher" in text, text
    assert "no answer within 3 s" in text and "ReadTimeoutError" in text and "not resent after attempt 1" in text
    assert isinstance(err.value.__cause__, urllib3.exceptions.ReadTimeoutError)


def test_the_bound_scales_with_the_timeout_scale(followed):
    followed(_down_since(time.time() - health.DOWN_BOUND_S - 15))
    timeouts.set_scale(2.0)
    try:
        calls: list[float] = []
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            _timing_out(calls)()
        assert len(calls) == 6, "75 s is under 60 s x 2"
    finally:
        timeouts.set_scale(1.0)


def test_an_api_server_ready_again_or_an_unconfirmed_blip_is_no_outage(followed):
    long_ago = time.time() - 600
    followed([*_down_since(long_ago), {"t": long_ago + 50, "ok": True, "what": "ready", "detail": "/readyz ok"}])
    assert health.down_evidence(60) == ""
    followed(_down_since(long_ago)[:2])  # one bad sample: not confirmed
    assert health.down_evidence(60) == ""
    followed([{"t": long_ago, "ok": False, "what": health.UNPROBEABLE, "detail": "HTTP 403"}])
    assert health.down_evidence(60) == ""


def test_an_answer_that_is_not_transient_is_never_turned_into_a_cluster_fault(followed):
    followed(_down_since(time.time() - 600))

    @retries.retry_transient
    def call():
        raise errors.NotFound(404, "NotFound", "namespaces x not found")

    with pytest.raises(errors.NotFound):
        call()


def test_a_log_that_cannot_be_read_resends_as_before(tmp_path):
    health.follow(tmp_path / "missing")
    try:
        assert health.down_evidence(0) == ""
    finally:
        health.follow(None)
