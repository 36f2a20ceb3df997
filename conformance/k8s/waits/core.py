"""The wait loops: :func:`until` (list, then watch from the resourceVersion, resume on disconnect) for one
object's state, and :func:`poll` (call, pause, repeat) for answers no watch delivers (lists, events, node
answers). Both are bounded; every pause of the waits package is :func:`poll`'s.

Every named object wait in this package is a pair of predicates handed to :func:`until` (design.md §7):
``done(obj) -> bool`` and ``failed(obj, events) -> str | None`` where ``obj`` is the latest object (None once
deleted) and ``events`` the involved object's recent core/v1 Events. The timeout is required and is
multiplied by ``--timeout-scale`` (:func:`conformance.core.timeouts.scaled`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import TypeVar

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.k8s.client import K8s
from conformance.k8s.waits.clock import timed

Done = Callable[[Obj | None], bool]
Failed = Callable[[Obj | None, list[Obj]], str | None]

T = TypeVar("T")
F = TypeVar("F", bound=Callable)
WATCH_SLICE_S = 5  # seconds per watch request: how often event-based failure predicates are re-checked
RECONNECT_PAUSE_S = 0.5  # seconds before a watch resumes after a disconnect


def recent_events(
    k8s: K8s,
    namespace: str | None,
    name: str | None = None,
    kind: str | None = None,
    limit: int = 20,
    *,
    strict: bool = False,
) -> list[Obj]:
    """The newest core/v1 Events in ``namespace`` (about object ``name`` of ``kind`` when given), oldest
    first. API errors yield an empty list when the events are only evidence beside a message; with ``strict``
    (a check that needs the events: "no FailedPrepareDynamicResources", a fail-fast predicate) they raise
    :class:`EventsUnreadable`, since a list that could not be read is not "no events" (breaker finding 10).
    Source: core/v1 Event (involvedObject field selectors)."""
    if not namespace:
        if strict:
            raise EventsUnreadable(f"events about {kind or 'object'} {name}: no namespace to list them in")
        return []
    selector = ",".join(
        f for f in (f"involvedObject.name={name}" if name else "", f"involvedObject.kind={kind}" if kind else "") if f
    )
    try:
        items = k8s.list("Event", namespace, field_selector=selector)
    except (errors.ApiError, OSError) as exc:
        if strict:
            raise EventsUnreadable(
                f"could not list the core/v1 Events of namespace {namespace} ({selector or 'all'}): {exc}; an "
                "unreadable event list is not 'no events' (fix: grant the run's user list/watch on events, "
                "`dra-conformance preflight` checks it, or see why the API server refused)"
            ) from exc
        return []
    items.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or e.get("metadata.creationTimestamp") or "")
    return items[-limit:]


class EventsUnreadable(errors.ConformanceError):
    """A check that needs the events of an object could not list them (:func:`recent_events` ``strict``)."""


def event_line(event: Obj) -> str:
    """``<type> <reason> <kind>/<name>: <message> (xN)`` for messages."""
    count = event.get("count") or 1
    return (
        f"{event.get('type', '')} {event.get('reason', '')} {event.get('involvedObject.kind', '')}/"
        f"{event.get('involvedObject.name', '')}: {event.get('message', '').strip()}"
        + (f" (x{count})" if count and count > 1 else "")
    )


def blames(party: str) -> Callable[[F], F]:
    """Decorator for a wait: a WaitTimeout it raises without a ``party`` gets ``party`` (``errors.DRIVER`` or
    ``errors.CLUSTER``: who had to bring the awaited state about; a nested wait that knew better keeps its own).
    Reporting classes a timeout by it (conformance/reporting/classify.py; s16 breaker F1)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except errors.WaitTimeout as exc:
                exc.party = exc.party or party
                raise

        return inner  # type: ignore[return-value]

    return wrap


@timed
def until(
    k8s: K8s,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    done: Done,
    timeout: float,
    awaited: str,
    failed: Failed | None = None,
    version: str | None = None,
    with_events: bool = False,
    describe: Callable[[Obj | None], str] | None = None,
    scale: bool = True,
) -> Obj | None:
    """Wait until ``done(obj)`` for one object; return the last object (None if it is gone).

    Raises WaitFailed as soon as ``failed`` returns a message, WaitTimeout after ``scaled(timeout)`` seconds
    (``timeout`` itself with ``scale=False``: a window a rule fixes, e.g. tolerationSeconds); both carry
    ``awaited``, the last observed state and recent events.
    """
    if timeout is None or timeout <= 0:
        raise ValueError("every wait needs a positive timeout (seconds)")
    budget = timeouts.scaled(timeout) if scale else float(timeout)
    deadline = time.monotonic() + budget
    show = describe or (lambda o: o.describe(status_only=True) if o is not None else "  (object does not exist)")
    wait = _Watch(k8s, kind, name, namespace, version, done, failed, with_events, awaited, budget, show)

    def timeout_error() -> errors.WaitTimeout:
        return errors.WaitTimeout(
            awaited, budget, show(wait.last) if wait.observed else "", _lines(k8s, namespace, name)
        )

    drive(wait, deadline, timeout_error)
    return wait.last


def drive(wait, deadline: float, timeout_error: Callable[[], errors.WaitError]) -> None:
    """The loop of every list-then-watch wait: call ``wait.step(remaining, deadline)`` (True once done) until it
    is done; re-list (``wait.rv = ""``) on 410 Gone, resume from ``wait.rv`` after a short pause on a
    disconnect; raise ``timeout_error()`` once the monotonic ``deadline`` has passed. ``wait``: an object with
    ``step`` and ``rv`` (:class:`_Watch`, :class:`~conformance.k8s.waits.many._Many`)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise timeout_error()
        try:
            if wait.step(remaining, deadline):
                return
        except errors.Gone:
            wait.rv = ""  # too old: re-list
        except (errors.TransientApiError, ConnectionError, OSError) + _urllib3_errors():
            poll(lambda: False, timeout=RECONNECT_PAUSE_S, interval=RECONNECT_PAUSE_S, scale=False)
            continue  # disconnect: resume from rv after a short pause


@dataclasses.dataclass
class _Watch:
    """The state of one :func:`until`: the object last seen and the resourceVersion its watch resumes from
    (``""``: list first)."""

    k8s: K8s
    kind: str
    name: str
    namespace: str | None
    version: str | None
    done: Done
    failed: Failed | None
    with_events: bool
    awaited: str
    budget: float
    show: Callable[[Obj | None], str]
    last: Obj | None = None
    observed: bool = False
    rv: str = ""

    def check(self, obj: Obj | None) -> bool:
        """Record ``obj`` as the last seen; raise WaitFailed when ``failed`` names a failure; else ``done(obj)``."""
        self.last, self.observed = obj, True
        events = (
            recent_events(self.k8s, self.namespace, self.name, strict=True)
            if (self.with_events and self.failed)
            else []
        )
        if self.failed:
            msg = self.failed(obj, events)
            if msg:
                shown = self.show(obj)
                raise errors.WaitFailed(
                    self.awaited, self.budget, shown, _lines(self.k8s, self.namespace, self.name, events), msg
                )
        return self.done(obj)

    def step(self, remaining: float, deadline: float) -> bool:
        """List when there is no resourceVersion yet, then watch one slice (at most WATCH_SLICE_S): True once
        the object is done."""
        field = f"metadata.name={self.name}"
        if not self.rv:
            items, self.rv = self.k8s.list_with_version(
                self.kind, self.namespace, field_selector=field, version=self.version
            )
            if self.check(items[0] if items else None):
                return True
        for etype, raw in self.k8s.watch(
            self.kind,
            self.namespace,
            resource_version=self.rv,
            field_selector=field,
            timeout_seconds=max(1, min(WATCH_SLICE_S, int(remaining) + 1)),
            version=self.version,
        ):
            self.rv = raw.get("metadata", {}).get("resourceVersion", self.rv)
            if etype in ("ADDED", "MODIFIED", "DELETED"):
                if self.check(None if etype == "DELETED" else Obj(raw)):
                    return True
            if time.monotonic() >= deadline:
                break
        # re-check event-based predicates each slice
        return bool(self.with_events and self.failed and self.check(self.last))


def stays(
    k8s: K8s,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    failed: Failed,
    duration: float,
    awaited: str,
    scale: bool = True,
) -> Obj:
    """Assert one object stays in a state for ``duration`` seconds (scaled unless ``scale=False``): the
    "consistently" wait. ``failed(obj, events)`` names what leaving the state looks like (``obj`` None: deleted).
    Raises WaitFailed with the object's state as soon as ``failed`` answers; returns the object as last read
    after the window.
    """
    try:
        until(
            k8s,
            kind,
            name,
            namespace,
            done=lambda o: False,
            failed=failed,
            timeout=duration,
            awaited=awaited,
            scale=scale,
        )
    except errors.WaitTimeout:
        return k8s.get(kind, name, namespace)
    raise AssertionError("unreachable: the wait has no done state")


def _urllib3_errors() -> tuple:
    import urllib3  # noqa: PLC0415

    return (urllib3.exceptions.HTTPError,)


def _lines(k8s: K8s, namespace: str | None, name: str, events: list[Obj] | None = None) -> list[str]:
    if events is None:
        events = recent_events(k8s, namespace, name)
    return [event_line(e) for e in events]


def has_event(events: list[Obj], reason: str) -> Obj | None:
    """The newest event with ``reason`` among ``events`` (None if absent)."""
    for event in reversed(events):
        if event.get("reason") == reason:
            return event
    return None


@timed
def poll(check: Callable[[], bool], *, timeout: float, interval: float, scale: bool = True) -> bool:
    """Call ``check()`` now and then every ``interval`` seconds until it returns True (-> True) or the
    deadline passed (-> False, after a last call at the deadline). ``timeout``: seconds, multiplied by
    ``--timeout-scale`` unless ``scale`` is False. Exceptions of ``check`` propagate (a failure predicate
    raises WaitFailed to end the wait early). Raises ValueError for a timeout that is not positive."""
    if timeout is None or timeout <= 0:
        raise ValueError("every wait needs a positive timeout (seconds)")
    deadline = time.monotonic() + (timeouts.scaled(timeout) if scale else timeout)
    while True:
        if check():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(interval, remaining))


def stays_equal(fetch: Callable[[], T], *, duration: float, interval: float = 2.0) -> T:
    """Call ``fetch`` every ``interval`` seconds for ``duration`` (scaled) seconds and require the same answer
    each time (upstream ``gomega.Consistently``: 20 s control plane, 60 s node windows); return it.

    Raises AssertionError showing the first and the differing answer as soon as one differs.
    """
    first = fetch()

    def changed() -> bool:
        again = fetch()
        if again != first:
            raise AssertionError(f"answer changed within {duration:.0f}s:\nfirst: {first!r}\nlater: {again!r}")
        return False

    poll(changed, timeout=duration, interval=interval)
    return first
