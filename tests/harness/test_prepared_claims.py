"""Unit tests of PreparedClaims: which claims a node still has prepared, from a fake NodeAccess (CDI spec
files naming the claim UID; PodResources ``List`` still reporting the claim)."""

import time

import grpc
import pytest

from conformance.core import errors
from conformance.k8s.tracker import Tracked, Tracker
from conformance.node.base import NodeAccessUnavailable
from conformance.node.prepared import PreparedClaims, leftovers, unprepared

CLAIM = Tracked("ResourceClaim", "c1", "ns", "uid-1", "v1")
OTHER = Tracked("ResourceClaim", "c2", "ns", "uid-2", "v1")


class FakePodResources:
    def __init__(self, pods, error=None):
        self.pods, self.error = pods, error

    def list(self):
        if self.error:
            raise self.error
        return self.pods


class FakeNodeAccess:
    mode = "fake"

    def __init__(self, specs, pod_resources):
        self.specs, self.pr = specs, pod_resources

    def cdi_specs(self, node):
        if isinstance(self.specs[node], Exception):
            raise self.specs[node]
        return self.specs[node]

    def pod_resources(self, node):
        if isinstance(self.pr[node], Exception):
            raise self.pr[node]
        return self.pr[node]


def _pod_using(namespace, name):
    return {
        "name": "p",
        "namespace": namespace,
        "containers": [{"name": "ctr", "dynamicResources": [{"claimName": name, "claimNamespace": namespace}]}],
    }


def test_cdi_spec_naming_the_uid_and_pod_resources_listing_the_claim_are_both_evidence():
    access = FakeNodeAccess(
        specs={"a": {"base.json": "{}"}, "b": {"driver-uid-1.json": '{"devices": []}'}},
        pod_resources={"a": FakePodResources([_pod_using("ns", "c1")]), "b": FakePodResources([])},
    )
    found = PreparedClaims(access, ["a", "b"])([CLAIM, OTHER])
    assert [(c.name, node, why.split(" ")[0]) for c, node, why in found] == [
        ("c1", "a", "PodResources"),
        ("c1", "b", "CDI"),
    ]
    assert "driver-uid-1.json" in found[1][2]


def test_a_node_whose_pod_resources_cannot_be_read_adds_nothing():
    access = FakeNodeAccess(
        specs={"a": {}, "b": {}},
        pod_resources={
            "a": NodeAccessUnavailable("no socket"),
            "b": FakePodResources([], error=grpc.RpcError("unavailable")),
        },
    )
    assert PreparedClaims(access, ["a", "b"])([CLAIM]) == []


@pytest.mark.parametrize("error", [NodeAccessUnavailable("no helper pod on node b"), OSError("exec stream closed")])
def test_a_node_whose_cdi_specs_cannot_be_read_is_an_error_naming_it(error):
    """A teardown look that could not look is not "nothing prepared" (breaker finding 10)."""
    access = FakeNodeAccess(
        specs={"a": {}, "b": error}, pod_resources={"a": FakePodResources([]), "b": FakePodResources([])}
    )
    with pytest.raises(NodeAccessUnavailable, match=f"could not look at node b \\(fake\\): {error}"):
        PreparedClaims(access, ["a", "b"])([CLAIM])


def test_the_tracker_reports_a_node_it_could_not_look_at_as_a_teardown_problem():
    """The tracker's poll over PreparedClaims turns the failed look into a LeakError problem naming the node."""
    access = FakeNodeAccess(specs={"a": OSError("exec failed")}, pod_resources={"a": FakePodResources([])})
    problems: list[str] = []
    tracker = Tracker.__new__(Tracker)
    tracker.prepared = PreparedClaims(access, ["a"])
    assert tracker._wait_unprepared([CLAIM], time.monotonic() + 1, problems) == []
    assert problems and "could not look at node a (fake): exec failed" in problems[0], problems


def test_nothing_prepared_gives_an_empty_list():
    access = FakeNodeAccess(
        specs={"a": {"driver-uid-9.json": "uid-9"}}, pod_resources={"a": FakePodResources([_pod_using("ns", "c9")])}
    )
    assert PreparedClaims(access, ["a"])([CLAIM, OTHER]) == []


def test_leftovers_name_cdi_specs_and_pod_resources_and_say_what_was_read():
    access = FakeNodeAccess(
        specs={"a": {"base.json": "{}", "driver-uid-1.json": "{}"}},
        pod_resources={"a": FakePodResources([_pod_using("ns", "c1"), _pod_using("ns", "c2")])},
    )
    left = leftovers(access, "a", CLAIM)
    assert left.found == [
        "CDI spec driver-uid-1.json names its UID uid-1",
        "PodResources List still reports it for pod ns/p",
    ]
    assert "2 CDI spec file(s)" in left.looked and "PodResources List of 2 pod(s)" in left.looked
    assert "node a" in left.describe()


def test_leftovers_without_pod_resources_still_read_cdi_and_say_so():
    access = FakeNodeAccess(specs={"a": {}}, pod_resources={"a": NodeAccessUnavailable("no socket in kind")})
    left = leftovers(access, "a", CLAIM)
    assert left.found == [] and "PodResources not read: no socket in kind" in left.looked


def test_leftovers_fail_when_cdi_specs_cannot_be_read():
    access = FakeNodeAccess(specs={"a": NodeAccessUnavailable("no exec")}, pod_resources={"a": FakePodResources([])})
    with pytest.raises(NodeAccessUnavailable):
        leftovers(access, "a", CLAIM)


def test_unprepared_returns_the_clean_look_or_times_out_naming_what_is_left(monkeypatch):
    """``unprepared`` waits until a look finds nothing (returning it); a CDI spec that stays ends it with a
    WaitTimeout saying the claim is still prepared and naming the spec."""
    monkeypatch.setattr("conformance.node.prepared.UNPREPARED_POLL_S", 0.01)
    specs = {"a": {"driver-uid-1.json": "{}"}}
    access = FakeNodeAccess(specs=specs, pod_resources={"a": NodeAccessUnavailable("kind")})
    with pytest.raises(errors.WaitTimeout, match="still prepared on node a: .*driver-uid-1.json names its UID"):
        unprepared(access, "a", CLAIM, timeout=0.05)
    specs["a"] = {}
    assert unprepared(access, "a", CLAIM, timeout=0.05).found == []
