"""Device status (--device-status, KEP-4817) and binding conditions (--binding-conditions, KEP-5007) of the
reference driver against an in-memory claim store; the faults no-device-status, partial-device-status and
binding-never-ready; the publisher's binding fields and its tolerance of a server that drops them (gate off)."""

from __future__ import annotations

import copy
import json

import pytest

from reference_driver import DRIVER_NAME, devicestatus
from reference_driver.claims import ClaimRef
from reference_driver.claimstatus import BindingController, DeviceStatusReporter
from reference_driver.config import from_args
from reference_driver.faults import Faults
from reference_driver.state import PreparedDevice
from tests.reference_driver.test_publisher import FakeSliceApi, make_publisher  # noqa: F401 - fixture

NOW = "2026-01-01T00:00:00Z"
REF = ClaimRef("ns", "claim", "uid-1")


class FakeClaims:
    """ClaimStatusWriter stand-in: claims by (namespace, name), edits applied like the real read-modify-write."""

    def __init__(self, *claims):
        self.claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        self.writes = 0

    def list_all(self):
        return copy.deepcopy(list(self.claims.values()))

    def update_devices(self, namespace, name, uid, edit):
        claim = self.claims[(namespace, name)]
        assert claim["metadata"]["uid"] == uid
        devices = edit(copy.deepcopy((claim.get("status") or {}).get("devices") or []))
        if devices is None:
            return False
        claim.setdefault("status", {})["devices"] = devices
        self.writes += 1
        return True


def _claim(*results, devices=()):
    return {
        "metadata": {"namespace": "ns", "name": "claim", "uid": "uid-1"},
        "status": {"allocation": {"devices": {"results": list(results)}}, "devices": list(devices)},
    }


def _result(device, pool="node-a", binding=True):
    res = {"request": "r", "driver": DRIVER_NAME, "pool": pool, "device": device}
    if binding:
        res |= {
            "bindingConditions": [devicestatus.BINDING_READY],
            "bindingFailureConditions": [devicestatus.BINDING_FAILED],
        }
    return res


PREPARED = [
    PreparedDevice(("r",), "node-a", "gpu-0", ("k/gpu=gpu-0",)),
    PreparedDevice(("r",), "node-a", "gpu-1", ("k/gpu=gpu-1",)),
]


def test_reporter_writes_one_entry_per_prepared_device_and_is_idempotent():
    store = FakeClaims(_claim(_result("gpu-0"), _result("gpu-1")))
    report = DeviceStatusReporter(store, DRIVER_NAME, now=lambda: NOW)
    assert report(REF, PREPARED)
    entries = store.claims[("ns", "claim")]["status"]["devices"]
    assert [(e["driver"], e["pool"], e["device"]) for e in entries] == [
        (DRIVER_NAME, "node-a", "gpu-0"),
        (DRIVER_NAME, "node-a", "gpu-1"),
    ]
    assert entries[0]["conditions"][0] | {"message": ""} == devicestatus.condition(
        devicestatus.READY, True, "Prepared", "", NOW
    )
    assert entries[1]["data"] == {"cdiDeviceIDs": ["k/gpu=gpu-1"]}
    later = DeviceStatusReporter(store, DRIVER_NAME, now=lambda: "2027-01-01T00:00:00Z")
    assert not later(REF, PREPARED), "a repeated prepare changes nothing (lastTransitionTime kept)"


def test_reporter_keeps_entries_of_others_and_survives_api_errors():
    other = {"driver": "net.example.com", "pool": "p", "device": "eth0", "conditions": []}
    store = FakeClaims(_claim(_result("gpu-0"), devices=[other]))
    DeviceStatusReporter(store, DRIVER_NAME, now=lambda: NOW)(REF, PREPARED[:1])
    assert [e["driver"] for e in store.claims[("ns", "claim")]["status"]["devices"]] == ["net.example.com", DRIVER_NAME]

    class Broken:
        def update_devices(self, *a):
            raise RuntimeError("apiserver down")

    assert DeviceStatusReporter(Broken(), DRIVER_NAME)(REF, PREPARED) is False


@pytest.mark.parametrize(("fault", "devices"), [("no-device-status", []), ("partial-device-status", ["gpu-0"])])
def test_device_status_faults(fault, devices):
    store = FakeClaims(_claim(_result("gpu-0"), _result("gpu-1")))
    DeviceStatusReporter(store, DRIVER_NAME, Faults.parse(fault), now=lambda: NOW)(REF, PREPARED)
    assert [e["device"] for e in store.claims[("ns", "claim")]["status"]["devices"]] == devices


def test_binding_controller_sets_conditions_of_its_pool_only_once():
    theirs = _result("gpu-9", pool="node-b")
    store = FakeClaims(_claim(_result("gpu-0"), _result("gpu-1", binding=False), theirs))
    ctl = BindingController(store, DRIVER_NAME, "node-a", now=lambda: NOW)
    assert ctl.sync() == 1
    entries = store.claims[("ns", "claim")]["status"]["devices"]
    assert [(e["device"], [(c["type"], c["status"]) for c in e["conditions"]]) for e in entries] == [
        ("gpu-0", [(devicestatus.BINDING_READY, "True")])
    ]
    assert devicestatus.binding_pending(store.claims[("ns", "claim")], DRIVER_NAME, "node-a") == []
    assert devicestatus.binding_pending(store.claims[("ns", "claim")], DRIVER_NAME, "node-b") == [theirs]
    assert ctl.sync() == 0 and store.writes == 1


def test_fault_binding_never_ready():
    store = FakeClaims(_claim(_result("gpu-0")))
    assert BindingController(store, DRIVER_NAME, "node-a", Faults.parse("binding-never-ready")).sync() == 0
    assert store.writes == 0


def test_binding_failure_entries_set_the_failure_condition():
    (entry,) = devicestatus.binding_entries([_result("gpu-0")], NOW, attached=False)
    assert [(c["type"], c["status"]) for c in entry["conditions"]] == [(devicestatus.BINDING_FAILED, "True")]


def test_publisher_publishes_binding_fields_and_tolerates_a_server_dropping_them(make_publisher):  # noqa: F811
    make, api, _ = make_publisher
    pub = make()
    pub.binding_conditions = True
    assert pub.sync().changed
    device = next(iter(api.objects.values()))["spec"]["devices"][0]
    assert device["bindingConditions"] == [devicestatus.BINDING_READY]
    assert not pub.sync().changed
    for obj in api.objects.values():  # what a server with DRADeviceBindingConditions off stores
        for dev in obj["spec"]["devices"]:
            dev.pop("bindingConditions"), dev.pop("bindingFailureConditions")
    assert not pub.sync().changed, "a dropped gated field must not cause churn"
    assert json.dumps(api.objects).count("bindingConditions") == 0


def test_flags_switch_the_modes_on_and_default_off():
    off = from_args(["--node-name", "n"], env={})
    on = from_args(["--node-name", "n", "--device-status", "--binding-conditions"], env={})
    assert (off.device_status, off.binding_conditions) == (False, False)
    assert (on.device_status, on.binding_conditions) == (True, True)


def _conditions(store):
    entries = store.claims[("ns", "claim")]["status"]["devices"]
    return {e["device"]: [(c["type"], c["status"]) for c in e["conditions"]] for e in entries}


def test_binding_controller_reports_the_failure_of_a_failing_device_once():
    store = FakeClaims(_claim(_result("gpu-0"), _result("gpu-3")))
    ctl = BindingController(store, DRIVER_NAME, "node-a", now=lambda: NOW, failing=frozenset({"gpu-3"}))
    assert ctl.sync() == 1
    assert _conditions(store) == {
        "gpu-0": [(devicestatus.BINDING_READY, "True")],
        "gpu-3": [(devicestatus.BINDING_FAILED, "True")],
    }
    assert ctl.sync() == 0 and store.writes == 1, "a reported failure is not rewritten"


def test_fault_binding_failure_unreported_reports_the_failing_device_attached():
    store = FakeClaims(_claim(_result("gpu-3")))
    faults = Faults.parse("binding-failure-unreported")
    BindingController(store, DRIVER_NAME, "node-a", faults, now=lambda: NOW, failing=frozenset({"gpu-3"})).sync()
    assert _conditions(store) == {"gpu-3": [(devicestatus.BINDING_READY, "True")]}


def test_binding_failure_devices_flag_needs_binding_conditions(tmp_path):
    base = ["--node-name", "n"]
    cfg = from_args([*base, "--binding-conditions", "--binding-failure-devices", "gpu-3, gpu-2"], env={})
    assert cfg.binding_failure_devices == frozenset({"gpu-2", "gpu-3"})
    assert from_args([*base, "--binding-conditions"], env={}).binding_failure_devices == frozenset()
    with pytest.raises(Exception, match="needs --binding-conditions"):
        from_args([*base, "--binding-failure-devices", "gpu-3"], env={})
