"""Which failed API requests are resent, and how (design.md §7: tenacity retries transient API errors only,
never states).

A request is resent unchanged only when resending can succeed: a connection reset or refused connection, 429
Too Many Requests, or a 5xx. A 409 Conflict carries a stale resourceVersion (or a failed precondition) that
the same body can never satisfy: :data:`retry_conflict` is for a caller that re-reads the object and
re-applies its change on each attempt (client-go ``retry.RetryOnConflict``).

A transient failure is resent at most 6 times, and not at all once the run's cluster-health watcher has seen the
API server down (a confirmed outage, still open) for longer than ``health.DOWN_BOUND_S`` (60 s) times
``--timeout-scale``: the call then fails with :class:`~conformance.core.errors.ClusterUnavailable` naming that
outage (conformance/k8s/health.py ``down_evidence``). Without it a request to an API server whose etcd is stopped
hangs to the client's 30 s timeout on each of the 6 attempts (issue 27 §2: a 30 s etcd stop ended its test after
~280 s); with it a call ends at most one request timeout after the bound. Outside a run (no watcher followed)
attempts alone bound it.
"""

from __future__ import annotations

import urllib3
from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential

from conformance.core import errors, timeouts
from conformance.k8s import health

CONNECTION_ERRORS = (
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.MaxRetryError,
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.ReadTimeoutError,
    ConnectionError,
)


def transient(exc: BaseException) -> bool:
    """Whether resending the same request may succeed: connection errors, 429 and 5xx (not Conflict)."""
    return isinstance(exc, (errors.TransientApiError, *CONNECTION_ERRORS))


def cluster_down() -> str:
    """The health watcher's evidence that the API server has been down longer than the bound (module docstring),
    ``""`` when it has not (or nothing is watched)."""
    return health.down_evidence(health.DOWN_BOUND_S * timeouts.scale())


def _stop_when_cluster_down(state: RetryCallState) -> bool:
    return bool(cluster_down())


def _give_up(state: RetryCallState):
    """After the last attempt: ClusterUnavailable with the outage's evidence when the watcher saw the API server
    down past the bound (chained to the request's own error), else the request's own error."""
    exc = state.outcome.exception() if state.outcome is not None else None
    evidence = cluster_down() if exc is not None and transient(exc) else ""
    if evidence:
        raise errors.ClusterUnavailable(
            f"{evidence}; API request not resent after attempt {state.attempt_number} (the API server has been down "
            f"over {health.DOWN_BOUND_S * timeouts.scale():.0f} s): {type(exc).__name__}: {str(exc)[:300]}"
        ) from exc
    return state.outcome.result()  # re-raises the request's error


# decorator: up to 6 attempts, exponential backoff 0.3 s .. 5 s, fewer when the API server is down past the bound
# (module docstring); then ClusterUnavailable with the outage's evidence, or the last error re-raised
retry_transient = retry(
    retry=retry_if_exception(transient),
    stop=stop_after_attempt(6) | _stop_when_cluster_down,
    wait=wait_exponential(multiplier=0.3, max=5),
    retry_error_callback=_give_up,
    reraise=True,
)

# decorator for a read-modify-write function: up to 5 attempts on Conflict, backoff 0.1 s .. 2 s
retry_conflict = retry(
    retry=retry_if_exception(lambda exc: isinstance(exc, errors.Conflict)),
    stop=stop_after_attempt(5),
    wait=wait_exponential(multiplier=0.1, max=2),
    reraise=True,
)
