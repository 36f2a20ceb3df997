"""One wait for many objects of one kind in one namespace: one LIST and one watch of the namespace, not a
LIST and a watch per object. The tracker's teardown phases and the session sweep wait this way for hundreds
of pods, claims and namespaces (issue 26 §4: the harness at 1,000 nodes; the per-object waits cost 4-6 API
round trips per pod). Bounded like :func:`~conformance.k8s.waits.core.until` (timeout required, scaled by
``--timeout-scale``); on timeout it names every object that did not get there, with its last state.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.k8s.client import K8s
from conformance.k8s.waits.clock import timed
from conformance.k8s.waits.core import WATCH_SLICE_S, drive, event_line, recent_events

Check = Callable[[str, Obj | None], bool]  # (name, latest object or None once deleted) -> done
SHOWN = 10  # objects whose last state a timeout message shows (the rest are counted)


class ManyTimeout(errors.WaitTimeout):
    """:func:`each_until` reached its deadline: ``pending`` lists the names of the objects not done (sorted);
    the message names each (``awaited(name)``) with the last state of the first SHOWN."""

    def __init__(self, pending: list[str], awaited: str, timeout: float, last_state: str, events: list[str]) -> None:
        self.pending = pending
        super().__init__(awaited, timeout, last_state, events)


@timed
def each_until(
    k8s: K8s,
    kind: str,
    namespace: str | None,
    names: Iterable[str],
    *,
    done: Check,
    timeout: float,
    awaited: Callable[[str], str],
    version: str | None = None,
    label_selector: str = "",
    scale: bool = True,
) -> dict[str, Obj | None]:
    """Wait until ``done(name, obj)`` for every name in ``names`` (objects of ``kind`` in ``namespace``; None:
    cluster-scoped, then narrow the LIST with ``label_selector``); ``obj`` is the latest object, None once it
    is deleted. One name is read with a ``metadata.name`` field selector, several with one LIST of the
    namespace (and ``label_selector``) and one watch from its resourceVersion (a request per WATCH_SLICE_S
    seconds), whatever their number; re-listed after 410 Gone, resumed after a disconnect.

    Returns ``{name: last object}`` (None when gone). Raises :class:`ManyTimeout` after ``timeout`` seconds
    (scaled unless ``scale=False``) naming each name not done (``awaited(name)``, e.g. ``Pod ns/x deleted``)
    and the last state of the first SHOWN; ValueError for a timeout that is not positive.
    """
    if timeout is None or timeout <= 0:
        raise ValueError("every wait needs a positive timeout (seconds)")
    wanted = sorted(set(names))
    budget = timeouts.scaled(timeout) if scale else float(timeout)
    field = f"metadata.name={wanted[0]}" if len(wanted) == 1 else ""
    wait = _Many(k8s, kind, namespace, version, label_selector, field, done, set(wanted))
    if wanted:
        drive(wait, time.monotonic() + budget, lambda: _timeout(wait, awaited, budget))
    return {name: wait.last.get(name) for name in wanted}


@dataclasses.dataclass
class _Many:
    """The state of one :func:`each_until`: the names not done yet, the last object seen per name and the
    resourceVersion its watch resumes from (``""``: list first)."""

    k8s: K8s
    kind: str
    namespace: str | None
    version: str | None
    label_selector: str
    field_selector: str
    done: Check
    pending: set[str]
    last: dict[str, Obj | None] = dataclasses.field(default_factory=dict)
    rv: str = ""

    def check(self, name: str, obj: Obj | None) -> None:
        """Record ``obj`` as the last seen of ``name`` (one of ours) and drop it from ``pending`` once done."""
        if name in self.pending:
            self.last[name] = obj
            if self.done(name, obj):
                self.pending.discard(name)

    def step(self, remaining: float, deadline: float) -> bool:
        """List when there is no resourceVersion yet (a pending name not listed is gone), then watch one slice
        (at most WATCH_SLICE_S): True once no name is pending."""
        selectors = {"label_selector": self.label_selector, "field_selector": self.field_selector}
        if not self.rv:
            items, self.rv = self.k8s.list_with_version(self.kind, self.namespace, version=self.version, **selectors)
            listed = {o.name: o for o in items}
            for name in sorted(self.pending):
                self.check(name, listed.get(name))
            if not self.pending:
                return True
        for etype, raw in self.k8s.watch(
            self.kind,
            self.namespace,
            resource_version=self.rv,
            timeout_seconds=max(1, min(WATCH_SLICE_S, int(remaining) + 1)),
            version=self.version,
            **selectors,
        ):
            self.rv = raw.get("metadata", {}).get("resourceVersion", self.rv)
            if etype in ("ADDED", "MODIFIED", "DELETED"):
                self.check(raw.get("metadata", {}).get("name", ""), None if etype == "DELETED" else Obj(raw))
                if not self.pending:
                    return True
            if time.monotonic() >= deadline:
                break
        return not self.pending


def _timeout(wait: _Many, awaited: Callable[[str], str], budget: float) -> ManyTimeout:
    """The timeout naming every pending object, the last state of the first SHOWN and the events of the first."""
    pending = sorted(wait.pending)
    text = "; ".join(awaited(n) for n in pending[:SHOWN]) + (
        f" (and {len(pending) - SHOWN} more: {', '.join(pending[SHOWN:])})" if len(pending) > SHOWN else ""
    )

    def state(name: str) -> str:
        if name not in wait.last:
            return "  (nothing observed)"
        obj = wait.last[name]
        return obj.describe(status_only=True) if obj is not None else "  (object does not exist)"

    shown = [state(n) if len(pending) == 1 else f"  {awaited(n)}:\n{state(n)}" for n in pending[:SHOWN]]
    events = [event_line(e) for e in recent_events(wait.k8s, wait.namespace, pending[0])]
    return ManyTimeout(pending, text, budget, "\n".join(shown), events)
