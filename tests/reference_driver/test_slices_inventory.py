"""Inventory -> slices (pure) and the device sources."""

from __future__ import annotations

import sys
import types

import pytest

from reference_driver import DRIVER_NAME, inventory, quantities, slices
from reference_driver.inventory import InventoryError, SimulatedInventory, nvml
from reference_driver.inventory.simulated import parse_spec


def sim(**raw):
    return SimulatedInventory(parse_spec(raw), "node-a").snapshot()


def test_simulated_gpus_are_deterministic_and_typed():
    """Same node -> same UUIDs (restart keeps slices unchanged); attributes typed as the API expects."""
    a, b = sim(count=2), sim(count=2)
    assert a == b
    dev = a.device("gpu-1").to_api()
    assert dev["attributes"]["index"] == {"int": 1}
    assert dev["attributes"]["driverVersion"] == {"version": "1.2.3"}
    assert dev["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:00"}
    assert dev["capacity"]["memory"] == {"value": "80Gi"}
    assert len(dev["attributes"]) + len(dev["capacity"]) <= 32
    other = SimulatedInventory(parse_spec({"count": 1}), "node-b").snapshot()
    assert other.device("gpu-0").attribute("uuid") != a.device("gpu-0").attribute("uuid")


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"count": -1}, "count"),
        ({"colour": 1}, "unknown key"),
        ({"memory": "1.5Gi"}, "memory"),
        ({"driverVersion": "1.02.3"}, "driverVersion"),
        ({"partitions": 9}, "partitions"),
        ({"capacityRequestPolicy": {"default": "1Gi"}}, "needs allowMultipleAllocations"),
    ],
)
def test_simulated_spec_errors_name_the_key(raw, fragment):
    with pytest.raises(InventoryError, match=fragment):
        parse_spec(raw)


def test_inventory_yaml_errors_name_the_file(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("source: quantum\n")
    with pytest.raises(InventoryError, match=f"{path}.*source 'quantum'"):
        inventory.load(path, "n")


def test_multiple_allocations_and_request_policy():
    dev = (
        sim(
            count=1,
            allowMultipleAllocations=True,
            capacityRequestPolicy={"default": "1Gi", "min": "1Gi", "step": "1Gi"},
        )
        .device("gpu-0")
        .to_api()
    )
    assert dev["allowMultipleAllocations"] is True
    assert dev["capacity"]["memory"]["requestPolicy"] == {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}


def test_partitions_use_shared_counters_in_their_own_slice():
    """sharedCounters live in a slice without devices; counter-consuming slices hold <= 64 devices."""
    snap = sim(count=30, partitions=2)  # 30 counter sets, 90 devices
    planned = slices.plan(snap, "node-a", DRIVER_NAME)
    counter_slices = [p for p in planned if p.shared_counters]
    assert [len(p.shared_counters) for p in counter_slices] == [8, 8, 8, 6]
    assert all(not p.devices for p in counter_slices)
    assert [len(p.devices) for p in planned if p.devices] == [64, 26]
    part = snap.device("gpu-0-part-1").to_api()
    assert part["consumesCounters"] == [
        {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}, "slice1": {"value": "1"}}}
    ]


def test_partitions_for_1_34_keep_counters_next_to_their_devices():
    """1.34 API servers require a device's counter set in its own slice: <= 8 sets and <= 64 devices."""
    planned = slices.plan(sim(count=30, partitions=2), "node-a", DRIVER_NAME, separate_counters=False)
    for p in planned:
        names = {c["name"] for c in p.shared_counters}
        assert len(names) <= 8 and len(p.devices) <= 64
        assert all(d["consumesCounters"][0]["counterSet"] in names for d in p.devices)
    assert sum(len(p.devices) for p in planned) == 90 and sum(len(p.shared_counters) for p in planned) == 30


def test_plain_devices_split_at_128_and_empty_inventory_gets_one_slice():
    assert [len(p.devices) for p in slices.plan(sim(count=300), "n", DRIVER_NAME)] == [128, 128, 44]
    empty = slices.plan(sim(count=0), "n", DRIVER_NAME)
    assert len(empty) == 1 and empty[0].devices == ()


def test_render_sets_node_pool_owner_and_generation():
    objs = slices.render(slices.plan(sim(count=2), "node-a", DRIVER_NAME), "node-a", "uid-n", DRIVER_NAME, 3)
    (obj,) = objs
    assert obj["metadata"]["name"] == f"node-a-{DRIVER_NAME}-0"
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "uid-n", "controller": True}
    ]
    assert obj["spec"]["pool"] == {"name": "node-a", "generation": 3, "resourceSliceCount": 1}
    assert obj["spec"]["nodeName"] == "node-a" and len(obj["spec"]["devices"]) == 2
    assert len(slices.slice_name("x" * 250, DRIVER_NAME, 0)) <= 253


def test_matches_tolerates_server_defaults_but_not_differences():
    assert slices.matches({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2, "c": 3}], "d": 4})
    assert not slices.matches({"a": [1]}, {"a": [1, 2]})
    assert slices.matches({"devices": [], "x": 1}, {"x": 1}), "omitempty on the server side"
    assert not slices.matches({"devices": [{"name": "a"}]}, {})
    assert slices.matches({"v": "1024Mi"}, {"v": "1Gi"}, lambda a, b: quantities.parse(a) == quantities.parse(b))


def test_quantities_parse_and_canonical():
    assert quantities.parse("80Gi") == 80 * 2**30 and quantities.parse("2k") == 2000
    assert quantities.canonical(81920 * 2**20) == "80Gi" and quantities.canonical(1000) == "1000"
    with pytest.raises(ValueError, match="1.5Gi"):
        quantities.parse("1.5Gi")


def test_nvml_helpers():
    assert nvml.semver("535.104.05") == "535.104.5" and nvml.semver("12.4") == "12.4.0"


def test_nvml_inventory_reads_devices_from_nvml(monkeypatch):
    """With a fake pynvml module (unit test only) the NVML source maps NVML answers to attributes."""
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlSystemGetDriverVersion=lambda: "550.54.15",
        nvmlSystemGetCudaDriverVersion_v2=lambda: 12040,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: "GPU-1234",
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=b"00000000:1B:00.0"),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=150754820096),
        nvmlDeviceGetMinorNumber=lambda h: 0,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    dev = nvml.NvmlInventory().snapshot().device("gpu-0")
    api = dev.to_api()
    assert api["attributes"]["productName"] == {"string": "NVIDIA H200"}
    assert api["attributes"]["architecture"] == {"string": "Hopper"}
    assert api["attributes"]["driverVersion"] == {"version": "550.54.15"}
    assert api["attributes"]["cudaDriverVersion"] == {"version": "12.4.0"}
    assert api["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:1b:00.0"}
    assert quantities.parse(api["capacity"]["memory"]["value"]) == 150754820096


def test_nvml_source_without_nvidia_ml_py_is_a_clear_error_and_auto_falls_back(monkeypatch):
    """source: nvml without the optional dependency names it; source: auto uses simulated GPUs then."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    with pytest.raises(InventoryError, match="nvidia-ml-py"):
        inventory.from_mapping({"source": "nvml"}, "n")
    assert inventory.from_mapping({"source": "auto", "simulated": {"count": 1}}, "n").kind == "simulated"


def test_large_pool_devices_file_spans_two_slices():
    """reference_driver/deploy/devices-large-pool.yaml (the self-validation profile's inventory) gives more
    devices than one slice may hold, so the pool is two slices (and one oversized slice with the fault)."""
    from pathlib import Path

    from reference_driver import inventory, slices

    path = Path(__file__).resolve().parents[2] / "reference_driver" / "deploy" / "devices-large-pool.yaml"
    snap = inventory.load(path, "n1").snapshot()
    assert len(snap.devices) > slices.MAX_DEVICES
    assert [len(p.devices) for p in slices.plan(snap, "n1", "gpu.example.com")] == [128, len(snap.devices) - 128]
    assert [len(p.devices) for p in slices.plan(snap, "n1", "gpu.example.com", max_devices=None)] == [130]


@pytest.mark.parametrize("separate", [True, False])
def test_counter_sets_per_slice_stay_within_32_counters(separate):
    """MIG-like sets of 5 counters (memory + 4 slices): at most 6 sets (30 counters) share a slice
    (1.34 ResourceSliceMaxSharedCounters sums counters over a slice's sets)."""
    planned = slices.plan(sim(count=16, partitions=4, partitionProfiles=[1, 3]), "n", DRIVER_NAME, separate)
    counted = [sum(len(c["counters"]) for c in p.shared_counters) for p in planned if p.shared_counters]
    assert counted == [30, 30, 20] and all(len(p.devices) <= 64 for p in planned)
