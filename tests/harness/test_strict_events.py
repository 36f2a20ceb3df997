"""Event reads that a check depends on are strict (breaker finding 10): an event list the API refused is an
error naming the namespace and the fix, never an empty "no events" answer."""

import pytest

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s import waits
from conformance.k8s.waits import core

POD = Obj({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "t"}})


class RefusingK8s:
    """A K8s whose Event list fails the way an RBAC-less user sees it."""

    def __init__(self):
        self.calls = 0

    def list(self, kind, namespace=None, field_selector=""):
        self.calls += 1
        raise errors.Forbidden(403, "Forbidden", 'events is forbidden: User "u" cannot list resource "events"')


class EventsK8s:
    def __init__(self, items):
        self.items = items

    def list(self, kind, namespace=None, field_selector=""):
        return [Obj(i) for i in self.items]


def test_evidence_reads_stay_lenient_but_strict_reads_raise_naming_the_namespace_and_the_fix():
    k8s = RefusingK8s()
    assert core.recent_events(k8s, "t", "p") == []
    with pytest.raises(waits.EventsUnreadable, match=r"could not list the core/v1 Events of namespace t .*grant"):
        core.recent_events(k8s, "t", "p", strict=True)
    assert k8s.calls == 2


def test_events_for_is_strict_so_an_empty_answer_proves_the_look_ran():
    with pytest.raises(waits.EventsUnreadable, match="not 'no events'"):
        waits.events_for(RefusingK8s(), POD, "FailedPrepareDynamicResources")
    event = {"reason": "FailedPrepareDynamicResources", "message": "boom", "involvedObject": {"name": "p"}}
    k8s = EventsK8s([event, {"reason": "Scheduled", "involvedObject": {"name": "p"}}])
    assert [e.get("message") for e in waits.events_for(k8s, POD, "FailedPrepareDynamicResources")] == ["boom"]
    assert waits.events_for(EventsK8s([]), POD, "FailedPrepareDynamicResources") == []
