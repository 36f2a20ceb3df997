"""Driver-published device taints (device config ``taints``), the 64-device slice limit they bring, the
fault ``taint-dropped`` and a server that drops the field (DRADeviceTaints off) without republishing churn."""

from __future__ import annotations

import copy
import json

import pytest

from reference_driver import DRIVER_NAME, inventory, publisher, slices
from reference_driver.cdi import CdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import Faults
from reference_driver.inventory import InventoryError
from reference_driver.inventory.renamed import RenamingSnapshot
from reference_driver.inventory.taints import TaintedInventory, parse
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import claim, result
from tests.reference_driver.test_publisher import FakeSliceApi

NODE = "node-a"
REF = ClaimRef("ns", "claim-1", "uid-1")
TAINT = {"device": "gpu-1", "key": "gpu.dra-conformance.test/maintenance", "value": "x", "effect": "NoSchedule"}


def test_configured_taint_is_published_on_its_device_only():
    inv = inventory.from_mapping({"simulated": {"count": 2}, "taints": [TAINT]}, NODE)
    devices = {d["name"]: d for d in (d.to_api() for d in inv.snapshot().devices)}
    assert "taints" not in devices["gpu-0"]
    assert devices["gpu-1"]["taints"] == [
        {"key": "gpu.dra-conformance.test/maintenance", "value": "x", "effect": "NoSchedule"}
    ]
    assert inventory.from_mapping({"simulated": {"count": 2}}, NODE).kind == "simulated", "off by default"


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"taints": {"device": "gpu-0"}}, "expected a list"),
        ({"taints": [{**TAINT, "effect": "Evict"}]}, "effect: 'Evict'"),
        ({"taints": [{**TAINT, "key": "not a key"}]}, "key: 'not a key'"),
        ({"taints": [{**TAINT, "value": "-bad-"}]}, "value: '-bad-'"),
        ({"taints": [{"device": "gpu-0", "key": "k"}]}, "device, key, effect"),
        ({"taints": [{**TAINT, "device": "gpu-9"}]}, "no device ['gpu-9']"),
    ],
)
def test_bad_taint_config_names_the_entry(raw, fragment):
    with pytest.raises(InventoryError, match="taints") as err:
        inventory.from_mapping({"simulated": {"count": 2}, **raw}, NODE)
    assert fragment in str(err.value)


def test_slices_with_taints_hold_at_most_64_devices():
    inner = inventory.from_mapping({"simulated": {"count": 100}}, NODE)
    tainted = TaintedInventory(inner, parse([TAINT]))
    assert [len(p.devices) for p in slices.plan(tainted.snapshot(), NODE, DRIVER_NAME)] == [64, 36]
    assert [len(p.devices) for p in slices.plan(inner.snapshot(), NODE, DRIVER_NAME)] == [100]


class DroppingApi(FakeSliceApi):
    """A server with DRADeviceTaints off: device taints are dropped on write."""

    def _store(self, body):
        body = copy.deepcopy(body)
        for dev in body["spec"].get("devices") or []:
            dev.pop("taints", None)
        super()._store(body)


def _publisher(api, faults=Faults()):
    inv = inventory.from_mapping({"simulated": {"count": 2}, "taints": [TAINT]}, NODE)
    pub = publisher.SlicePublisher(None, NODE, DRIVER_NAME, inv.snapshot, faults)
    pub._resource, pub._separate = api, True
    return pub


def _taints(api):
    return {d["name"]: d.get("taints") for o in api.objects.values() for d in o["spec"]["devices"]}


def test_fault_taint_dropped_publishes_no_taint(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "uid")
    healthy, faulty = FakeSliceApi(), FakeSliceApi()
    _publisher(healthy).sync()
    pub = _publisher(faulty, Faults.parse("taint-dropped"))
    pub.sync()
    assert _taints(healthy)["gpu-1"][0]["effect"] == "NoSchedule"
    assert _taints(faulty) == {"gpu-0": None, "gpu-1": None}
    assert not pub.sync().changed, "a fault must not cause churn"


def test_server_dropping_taints_causes_no_republish_loop(monkeypatch):
    monkeypatch.setattr(publisher, "node_uid", lambda api, node: "uid")
    api = DroppingApi()
    pub = _publisher(api)
    assert pub.sync().changed and api.writes == 1
    again = pub.sync()
    assert not again.changed and pub.taints_dropped and api.writes == 1
    assert json.dumps(api.objects).count("taints") == 0


def _state(tmp_path, source, faults, snapshot, on_unprepared=None):
    store, checkpoint = CdiStore(tmp_path / "cdi"), Checkpoint(tmp_path / "state" / "checkpoint.json")
    return DeviceState(DRIVER_NAME, {NODE}, snapshot, source, store, checkpoint, faults, on_unprepared=on_unprepared)


def test_fault_tainted_prepare_refused_only_for_tainted_devices(tmp_path, source):
    inv = inventory.from_mapping({"simulated": {"count": 2}, "taints": [TAINT]}, NODE)
    source.add(claim(results=[result("gpu-1")]))
    assert [d.device for d in _state(tmp_path, source, Faults(), inv.snapshot).prepare(REF)] == ["gpu-1"]
    faulty = _state(tmp_path / "f", source, Faults.parse("tainted-prepare-refused"), inv.snapshot)
    with pytest.raises(ClaimError, match="gpu-1 is tainted"):
        faulty.prepare(REF)
    source.add(claim(results=[result("gpu-0")]))
    assert [d.device for d in faulty.prepare(REF)] == ["gpu-0"], "untainted devices are still prepared"


def test_fault_renamed_after_unprepare_publishes_a_new_name(tmp_path, source):
    inv = inventory.from_mapping({"simulated": {"count": 2}}, NODE)
    synced = []
    renaming = RenamingSnapshot(inv.snapshot, on_rename=lambda: synced.append(True))
    state = _state(tmp_path, source, Faults.parse("renamed-after-unprepare"), renaming, renaming.rename)
    source.add(claim(results=[result("gpu-1")]))
    state.prepare(REF)
    state.unprepare(REF.uid)
    names = [d.name for d in renaming().devices]
    assert names == ["gpu-0", "gpu-1-reset-1"] and synced == [True]
    assert renaming().device("gpu-1-reset-1").attributes == inv.snapshot().device("gpu-1").attributes
    source.add(claim(results=[result("gpu-1-reset-1")]))
    state.prepare(REF)
    state.unprepare(REF.uid)
    assert [d.name for d in renaming().devices] == ["gpu-0", "gpu-1-reset-2"]


TIMED = {"key": "dra-conformance.test/under-test", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}


@pytest.mark.parametrize(
    ("tolerations", "timed"),
    [
        ([TIMED], True),
        ([{**TIMED, "effect": ""}], True),
        ([{k: v for k, v in TIMED.items() if k != "tolerationSeconds"}], False),
        ([{**TIMED, "effect": "NoSchedule"}], False),
        ([], False),
    ],
)
def test_fault_toleration_seconds_refused_only_for_time_limited_noexecute(tmp_path, source, tolerations, timed):
    inv = inventory.from_mapping({"simulated": {"count": 2}}, NODE)
    source.add(claim(results=[result("gpu-1", tolerations=tolerations)]))
    assert [d.device for d in _state(tmp_path, source, Faults(), inv.snapshot).prepare(REF)] == ["gpu-1"]
    faulty = _state(tmp_path / "f", source, Faults.parse("toleration-seconds-refused"), inv.snapshot)
    if timed:
        with pytest.raises(ClaimError, match="toleration-seconds-refused"):
            faulty.prepare(REF)
    else:
        assert [d.device for d in faulty.prepare(REF)] == ["gpu-1"]
