"""Unit tests of the ``cdi: false`` checks (s10 breaker finding 1): :func:`conformance.node.cdi.appeared` finds
spec files by their appearance, not by the claim UID, and :func:`conformance.node.prepared.cdi_used` adds the
CDI device IDs PodResources reports for the claim."""

import json
from types import SimpleNamespace

from conformance.k8s.tracker import Tracked
from conformance.node import cdi
from conformance.node.base import NodeAccessUnavailable
from conformance.node.prepared import cdi_used

CLAIM = Tracked("ResourceClaim", "c1", "ns", "uid-1", "v1")
POD = SimpleNamespace(name="p", namespace="ns", spec=SimpleNamespace(node_name="n1"))
SPEC = json.dumps({"cdiVersion": "0.5.0", "kind": "vendor.example/gpu", "devices": [{"name": "ns-c1-gpu-0"}]})


class FakePodResources:
    def __init__(self, ids=()):
        self.ids = ids

    def dynamic_resources(self, pod, namespace):
        cdi_devices = [{"name": i} for i in self.ids]
        entry = {"claimName": "c1", "claimNamespace": "ns", "claimResources": [{"cdiDevices": cdi_devices}]}
        return {"ctr": [entry]}


class FakeNodeAccess:
    mode = "fake"

    def __init__(self, specs, pod_resources):
        self.specs, self.pr = specs, pod_resources

    def cdi_specs(self, node):
        return dict(self.specs)

    def pod_resources(self, node):
        if isinstance(self.pr, Exception):
            raise self.pr
        return self.pr


def test_appeared_finds_new_and_changed_files_whatever_their_name():
    before = {"static.json": "{}", "other-driver.yaml": "kind: x/y"}
    after = {"static.json": '{"kind": "v/g"}', "other-driver.yaml": "kind: x/y", "ns-c1.json": SPEC}
    assert sorted(cdi.appeared(before, after)) == ["ns-c1.json", "static.json"]
    assert cdi.appeared(after, after) == {}
    assert cdi.describe({"a.json": SPEC, "b.json": "not: [a spec"}) == [
        "a.json (kind vendor.example/gpu)",
        "b.json (kind ?)",
    ]


def test_a_uid_less_spec_that_appeared_is_cdi_use_though_no_uid_lookup_finds_it():
    access = FakeNodeAccess({"base.json": "{}", "vendor_ns-c1.json": SPEC}, FakePodResources())
    assert cdi.specs_naming(access.cdi_specs("n1"), CLAIM.uid) == {}
    used = cdi_used(access, {"base.json": "{}"}, POD, CLAIM)
    assert used.found == [
        "CDI spec vendor_ns-c1.json (kind vendor.example/gpu) appeared on the node while the claim was prepared"
    ], used
    assert "PodResources entry of 1 container(s)" in used.describe()


def test_cdi_ids_in_podresources_are_cdi_use_even_from_a_spec_older_than_the_pod():
    access = FakeNodeAccess({"static.json": SPEC}, FakePodResources(["vendor.example/gpu=gpu-0"]))
    used = cdi_used(access, {"static.json": SPEC}, POD, CLAIM)
    assert used.found == [
        "PodResources reports CDI device IDs ['vendor.example/gpu=gpu-0'] for it (NodePrepareResources named them)"
    ]


def test_a_driver_without_cdi_shows_nothing_and_an_unreadable_podresources_is_said():
    clean = cdi_used(FakeNodeAccess({"base.json": "{}"}, FakePodResources()), {"base.json": "{}"}, POD, CLAIM)
    assert clean.found == [] and "1 CDI spec file(s), 1 before the pod" in clean.looked
    blind = cdi_used(FakeNodeAccess({}, NodeAccessUnavailable("no socket")), {}, POD, CLAIM)
    assert blind.found == [] and "PodResources not read: no socket" in blind.looked
