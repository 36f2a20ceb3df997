"""The publisher removes what disappears from its desired slices (issue 24 §4: a taint removed from the config
stayed published after a restart, because a published slice with extra fields "matched"), without republishing
for fields the API server fills in (DeviceTaint.timeAdded); and fault ``publishes-on-some-nodes-only``."""

from __future__ import annotations

import copy

from reference_driver import DRIVER_NAME, inventory, publisher, slices
from reference_driver.faults import Faults
from tests.reference_driver.test_publisher import FakeSliceApi

TAINT = {"device": "gpu-1", "key": "gpu.dra-conformance.test/maintenance", "value": "x", "effect": "NoSchedule"}


class DefaultingApi(FakeSliceApi):
    """A server that fills in DeviceTaint.timeAdded, as the real one does."""

    def _store(self, body):
        body = copy.deepcopy(body)
        for dev in body["spec"].get("devices") or []:
            for taint in dev.get("taints") or []:
                taint.setdefault("timeAdded", "2026-01-01T00:00:00Z")
        super()._store(body)


def _publisher(api, config, node="node-a", faults=Faults()):
    inv = inventory.from_mapping(config, node)
    pub = publisher.SlicePublisher(None, node, DRIVER_NAME, inv.snapshot, faults)
    pub._resource, pub._separate = api, True
    return pub


def _devices(api):
    return {d["name"]: d for o in api.objects.values() for d in o["spec"]["devices"]}


def test_taint_removed_from_the_config_is_unpublished_after_a_restart(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "uid")
    api = DefaultingApi()
    _publisher(api, {"simulated": {"count": 2}, "taints": [TAINT]}).sync()
    assert _devices(api)["gpu-1"]["taints"][0]["timeAdded"]
    assert not _publisher(api, {"simulated": {"count": 2}, "taints": [TAINT]}).sync().changed, "timeAdded: no churn"
    # the plugin restarts with the taint removed from its config
    result = _publisher(api, {"simulated": {"count": 2}}).sync()
    assert result.changed and result.generation == 2
    assert "taints" not in _devices(api)["gpu-1"], _devices(api)["gpu-1"]
    assert not _publisher(api, {"simulated": {"count": 2}}).sync().changed


def test_attribute_dropped_from_the_desired_slice_is_unpublished(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "uid")
    api = FakeSliceApi()
    _publisher(api, {"simulated": {"count": 2}}).sync()
    assert "model" in _devices(api)["gpu-0"]["attributes"]
    assert _publisher(api, {"simulated": {"count": 2}}, faults=Faults.parse("attribute-missing")).sync().changed
    assert "model" not in _devices(api)["gpu-0"]["attributes"]


def test_matches_exact_allows_only_server_defaults_and_empty_extras():
    want = {"devices": [{"name": "a", "taints": [{"key": "k", "effect": "NoSchedule"}]}]}
    defaulted = {"devices": [{"name": "a", "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "t"}]}]}
    assert slices.matches(want, defaulted, exact=True)
    assert slices.matches({"devices": [{"name": "a"}]}, {"devices": [{"name": "a", "taints": []}]}, exact=True)
    assert not slices.matches({"devices": [{"name": "a"}]}, defaulted, exact=True)
    assert slices.matches({"devices": [{"name": "a"}]}, defaulted), "not exact: extra keys are server defaults"


def test_fault_publishes_on_some_nodes_only(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "uid")
    faults = Faults.parse("publishes-on-some-nodes-only")
    served, skipped = FakeSliceApi(), FakeSliceApi()
    _publisher(served, {"simulated": {"count": 2}}, node="lab-node-0", faults=faults).sync()
    _publisher(skipped, {"simulated": {"count": 2}}, node="lab-node-1", faults=faults).sync()
    assert len(_devices(served)) == 2 and skipped.objects == {}
    assert [publisher.skipped_node(n) for n in ("kind-worker", "kind-worker2", "x-node-0", "x-node-9")] == [
        False,
        True,
        False,
        True,
    ]
