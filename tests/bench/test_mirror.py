"""``bench --mirror`` without a cluster: the reference driver's own slice builder (reference_driver.slices, the
partitions inventory of reference_driver/deploy/devices-partitions.yaml) gives the source slices; the mirror
copies them per fake node, counts what a node certainly holds, refuses partitions on default gates and reads
slice files. The live path (capture from a cluster, publish, schedule) is tests/e2e/test_bench_mirror.py."""

from __future__ import annotations

import pytest
import yaml
from conformance_tools.bench import mirror, workload
from conformance_tools.bench.config import BenchConfig

from conformance.core.errors import ConfigError
from reference_driver import slices
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.simulated import parse_spec

DRIVER, NODE = "gpu.dra-conformance.test", "real-0"
PARTITIONS = {"count": 2, "memory": "80Gi", "partitions": 4, "partitionProfiles": [1, 3]}


def published(raw: dict, separate_counters: bool = True) -> list[dict]:
    """The slices the reference driver publishes for ``raw`` on node real-0 (1.35+ layout by default)."""
    snapshot = SimulatedInventory(parse_spec(raw), NODE).snapshot()
    planned = slices.plan(snapshot, NODE, DRIVER, separate_counters=separate_counters)
    return slices.render(planned, NODE, "uid-0", DRIVER, generation=3)


@pytest.mark.parametrize("separate", [True, False])
def test_partitions_mirror_per_fake_node_with_counters_and_one_unit_per_counter_set(separate):
    source = published(PARTITIONS, separate)
    another_driver = {"spec": {"driver": "x", "nodeName": NODE, "pool": {"name": NODE}}}
    model = mirror._node_slices([*source, another_driver], DRIVER, None, "test")
    assert model.describe() == {
        "driver": DRIVER,
        "source_node": NODE,
        "slices_per_node": len(source),
        "devices_per_node": 2 * (1 + 4 + 1),  # whole GPU, four 1g, one 3g per GPU
        "counter_sets_per_node": 2,
        "partitioned": True,
        "units_per_node": 2,  # every device consumes counters: one device per set certainly fits
    }
    copies = mirror.fake_slices(model, "b1-kwok-7", "bench-1")
    assert [c["metadata"]["name"] for c in copies] == [f"mirror-b1-kwok-7-{j}" for j in range(len(source))]
    for copy, original in zip(copies, source, strict=True):
        assert copy["spec"]["nodeName"] == "b1-kwok-7" and copy["spec"]["pool"]["name"] == "b1-kwok-7-0"
        assert copy["metadata"]["labels"] == {workload.BENCH_LABEL: "bench-1"}
        same = {k: v for k, v in copy["spec"].items() if k not in ("nodeName", "pool")}
        assert same == {k: v for k, v in original["spec"].items() if k not in ("nodeName", "pool")}
        assert copy["spec"]["pool"]["resourceSliceCount"] == original["spec"]["pool"]["resourceSliceCount"]
    assert source[0]["spec"]["nodeName"] == NODE  # the source is untouched


def test_plain_devices_count_one_unit_each_and_pick_the_named_node():
    two = published({"count": 3}) + [
        {**s, "spec": {**s["spec"], "nodeName": "real-1"}} for s in published({"count": 5})
    ]
    assert mirror._node_slices(two, DRIVER, None, "t").units == 3  # first node by name
    assert mirror._node_slices(two, DRIVER, "real-1", "t").units == 5
    with pytest.raises(ConfigError, match="no slice on node 'real-9'"):
        mirror._node_slices(two, DRIVER, "real-9", "t")
    with pytest.raises(ConfigError, match="no node-local ResourceSlice of driver 'other'"):
        mirror._node_slices(two, "other", None, "t")


def test_partitions_need_all_feature_gates():
    model = mirror._node_slices(published(PARTITIONS), DRIVER, None, "t")
    with pytest.raises(ConfigError, match="shared counters") as info:
        mirror.check_gates(model, "defaults")
    assert "--feature-gates all" in str(info.value)
    mirror.check_gates(model, "all")
    mirror.check_gates(mirror._node_slices(published({"count": 2}), DRIVER, None, "t"), "defaults")


def test_slice_files_round_trip_and_kubectl_lists_load(tmp_path):
    model = mirror._node_slices(published(PARTITIONS), DRIVER, None, "t")
    mirror.save(model, tmp_path / "s.json")
    assert mirror.load(tmp_path / "s.json", DRIVER) == model
    listing = {"apiVersion": "v1", "kind": "List", "items": list(model.slices)}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(listing))
    assert mirror.load(tmp_path / "s.yaml", DRIVER, NODE).units == 2
    with pytest.raises(ConfigError, match="cannot read"):
        mirror.load(tmp_path / "absent.yaml", DRIVER)


def test_mirror_runs_only_variants_that_fit_any_driver_and_cel_with_its_own_selector():
    assert BenchConfig(mirror=DRIVER).run_variants() == ("template", "prioritized", "shared")
    cfg = BenchConfig(mirror=DRIVER, mirror_selector='device.attributes["x"].model == "A"')
    assert cfg.run_variants() == ("template", "cel", "prioritized", "shared")
    never = workload.claim_spec("prioritized", DRIVER)["devices"]["requests"][0]["firstAvailable"][0]["selectors"]
    assert never == [{"cel": {"expression": f'device.driver != "{DRIVER}"'}}]  # no attribute of any one driver
    spec = workload.claim_spec("cel", DRIVER, cfg.mirror_selector)
    assert spec["devices"]["requests"][0]["exactly"]["selectors"] == [{"cel": {"expression": cfg.mirror_selector}}]
    assert "startsWith" in str(workload.claim_spec("cel", DRIVER))  # the fleet's own selector otherwise
    assert mirror.resolve(BenchConfig()) is None


def test_workloads_that_do_not_fit_the_model_are_named_with_the_reason():
    """Given a model without counters or PCIe roots (dra-example-driver's 8 GPUs), the report names cel (no
    selector), match-attribute and partitions as not run, rather than showing zeros; a partitioned model with a
    selector leaves only match-attribute."""
    plain = {"spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE}, "devices": [{"name": "gpu-0"}]}}
    model = mirror._node_slices([plain], DRIVER, None, "t")
    reasons = mirror.unfit(model, BenchConfig().variants)
    assert sorted(reasons) == ["cel", "match-attribute", "partitions"], reasons
    assert "no device publishes resource.kubernetes.io/pcieRoot" in reasons["match-attribute"]
    assert "no partitions" in reasons["partitions"] and "--mirror-selector" in reasons["cel"]
    partitioned = mirror._node_slices(published(PARTITIONS), DRIVER, None, "t")
    assert sorted(mirror.unfit(partitioned, BenchConfig().variants, "true")) == ["match-attribute"]
    assert mirror.unfit(partitioned, ("template",), "") == {}
