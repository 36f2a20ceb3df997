"""Which failed API requests are resent, and how (design.md §7: tenacity retries transient API errors only,
never states).

A request is resent unchanged only when resending can succeed: a connection reset or refused connection, 429
Too Many Requests, or a 5xx. A 409 Conflict carries a stale resourceVersion (or a failed precondition) that
the same body can never satisfy: :data:`retry_conflict` is for a caller that re-reads the object and
re-applies its change on each attempt (client-go ``retry.RetryOnConflict``).
"""

from __future__ import annotations

import urllib3
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from conformance.core import errors

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


# decorator: up to 6 attempts, exponential backoff 0.3 s .. 5 s, the last error re-raised
retry_transient = retry(
    retry=retry_if_exception(transient),
    stop=stop_after_attempt(6),
    wait=wait_exponential(multiplier=0.3, max=5),
    reraise=True,
)

# decorator for a read-modify-write function: up to 5 attempts on Conflict, backoff 0.1 s .. 2 s
retry_conflict = retry(
    retry=retry_if_exception(lambda exc: isinstance(exc, errors.Conflict)),
    stop=stop_after_attempt(5),
    wait=wait_exponential(multiplier=0.1, max=2),
    reraise=True,
)
