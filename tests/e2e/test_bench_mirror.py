"""`dra-conformance bench --mirror` end to end: the reference driver runs for real on one node of the shared
local cluster with its MIG-like partitions inventory (reference_driver/deploy/devices-partitions.yaml: 2 GPUs,
each a counter set with a whole device, four 1g and one 3g partition) under a driver name of our own; its
slices are captured, the driver stopped and its slices removed; then the benchmark mirrors that slice layout
onto 20 kwok nodes of its own cluster and schedules it beside the classic extended resource. Every pod binds,
the report names the mirrored model, and nothing is left behind."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from conformance_lab.local.config import STATE_ROOT
from conformance_tools.bench import mirror
from conformance_tools.bench.config import BenchConfig
from conformance_tools.bench.run import bench

from conformance.core import errors
from conformance.k8s.client import K8s

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]
DRIVER = f"e2e-{uuid.uuid4().hex[:6]}.mirror.dra-conformance.test"  # ours alone on the shared cluster


def _own_slices(k8s: K8s) -> list:
    return k8s.list("ResourceSlice", field_selector=f"spec.driver={DRIVER}")


def _wait(what: str, probe, timeout: float = 60.0):
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        done, seen = probe()
        if done:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last observed: {seen}")


@pytest.fixture
def partitions_slices(local_cluster, tmp_path) -> Path:
    """The slice file of the reference driver's partitions inventory as it published it on one real node."""
    node, k8s = local_cluster.nodes[0], K8s.from_kubeconfig(local_cluster.kubeconfig)
    argv = [sys.executable, "-m", "reference_driver", "--node-name", node.name]
    argv += ["--kubeconfig", str(local_cluster.kubeconfig), "--plugin-registry-dir", str(node.plugin_registry_dir)]
    argv += ["--plugins-dir", str(node.plugins_dir), "--cdi-dir", str(node.cdi_dir)]
    argv += ["--state-dir", str(tmp_path / "state"), "--driver-name", DRIVER]
    argv += ["--config", str(REPO / "reference_driver" / "deploy" / "devices-partitions.yaml")]
    proc = local_cluster.start_host_process(node.name, f"mirror-{DRIVER[4:10]}", argv, env={"PYTHONPATH": str(REPO)})
    try:
        _wait(f"slices of {DRIVER}", lambda: (len(_own_slices(k8s)) >= 1 and proc.is_running(), proc.tail(5)))
        _wait("a settled pool", lambda: (_settled(k8s), [s.name for s in _own_slices(k8s)]))
        path = tmp_path / "slices.json"
        mirror.save(mirror.capture(k8s, DRIVER), path)
    finally:
        proc.stop()
        for s in _own_slices(k8s):  # left in place on exit (the kubelet would wipe them 30 s later)
            try:
                k8s.delete("ResourceSlice", s.name)
            except errors.NotFound:
                pass
        _wait("our slices gone", lambda: (not _own_slices(k8s), [s.name for s in _own_slices(k8s)]))
    return path


def _settled(k8s: K8s) -> bool:
    items = [s.raw["spec"] for s in _own_slices(k8s)]
    return bool(items) and len(items) == items[0]["pool"]["resourceSliceCount"]


def test_mirrored_partitions_schedule_on_20_kwok_nodes_beside_classic(partitions_slices, tmp_path):
    # given the reference driver's partition layout captured from a real node, mirrored onto 20 kwok nodes
    cfg = BenchConfig(
        nodes=20, pods=40, scale_points=(), feature_gates="all", out_dir=str(tmp_path / "bench"), html=False
    )
    cfg = dataclasses.replace(cfg, mirror=DRIVER, mirror_slices=str(partitions_slices))
    lines: list[str] = []
    # when the benchmark runs
    code = bench(cfg, tmp_path, progress=lines.append)
    # then the template, prioritized, shared and classic workloads bound every pod on the same fleet
    assert code == 0, "\n".join(lines[-30:])
    data = json.loads((tmp_path / "bench" / "bench.json").read_text())
    assert data["cluster"]["mirror"] == {
        "driver": DRIVER,
        "source_node": data["cluster"]["mirror"]["source_node"],
        "slices_per_node": data["cluster"]["mirror"]["slices_per_node"],
        "devices_per_node": 12,
        "counter_sets_per_node": 2,
        "partitioned": True,
        "units_per_node": 2,
        "not_run": mirror.unfit(mirror.load(partitions_slices, DRIVER), cfg.variants),  # cel, match-attribute
    }
    assert {r["variant"] for r in data["results"]} == {"template", "prioritized", "shared", "classic"}
    for r in data["results"]:
        assert r["nodes"] == 20 and r["bound"] == r["pods"] == 40, r
        assert r["throughput_pods_per_s"] > 0 and r["latency_s"]["pod_bound"]["p99"] is not None, r
    assert [row["nodes"] for row in data["dra_over_classic"]] == [20]
    print("\n".join(line for line in lines if "nodes" in line or "DRA/classic" in line))
    # and the tear-down left nothing: mirrored slices deleted with the fake nodes, cluster state gone
    assert not any("TEARDOWN PROBLEM" in line for line in lines), lines
    assert not (STATE_ROOT / f"b{data['id'][-4:]}").exists()
