"""Unit test: waits.claim_device_status is done only once every allocation result of the driver has its
status.devices entry of that driver (KEP-4817)."""

from conformance.core.objects import Obj
from conformance.k8s.waits import claims

DRIVER = "gpu.example.com"


def _claim(devices, entries):
    results = [{"request": "r", "driver": DRIVER, "pool": "a", "device": d} for d in devices]
    return Obj(
        {
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "status": {"allocation": {"devices": {"results": results}}, "devices": entries},
        }
    )


def _entry(device, driver=DRIVER):
    return {"driver": driver, "pool": "a", "device": device}


def test_done_needs_an_entry_of_the_driver_per_allocated_device(monkeypatch):
    seen = {}
    monkeypatch.setattr(claims, "until", lambda *a, **kw: seen.update(kw))
    claims.claim_device_status(None, _claim(["d0"], []), DRIVER, timeout=1)
    done = seen["done"]
    assert done(_claim(["d0", "d1"], [_entry("d0"), _entry("d1")]))
    assert not done(_claim(["d0", "d1"], [_entry("d0")]))
    assert not done(_claim(["d0"], [_entry("d0", driver="other.example.com")]))
    assert not done(_claim([], [])) and not done(None)
    assert "status.devices" in seen["awaited"]
