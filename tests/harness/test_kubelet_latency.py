"""Per-driver NodePrepareResources / NodeUnprepareResources latency from kubelet histograms: the quantile
estimate, the per-driver summary over nodes, the JSON + summary.md line, and the run's teardown recording it."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from conformance.core.config import from_options
from conformance.k8s import sweep
from conformance.node import kubelet_latency
from conformance.runner.session import Session
from tests.harness.test_registry import shipped

M = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"


def _metrics(driver: str, prepare: list[tuple[str, int]], unprepare_failed: int = 0) -> str:
    lines = ["# TYPE dra_grpc_operations_duration_seconds histogram"]
    for le, count in prepare:
        lines.append(
            f'dra_grpc_operations_duration_seconds_bucket{{driver_name="{driver}",grpc_status_code="OK",'
            f'method_name="{M}NodePrepareResources",le="{le}"}} {count}'
        )
    lines.append(
        f'dra_grpc_operations_duration_seconds_bucket{{driver_name="{driver}",grpc_status_code="Unknown",'
        f'method_name="{M}NodeUnprepareResources",le="+Inf"}} {unprepare_failed}'
    )
    lines.append(
        f'dra_grpc_operations_duration_seconds_count{{driver_name="{driver}",grpc_status_code="Unknown",'
        f'method_name="{M}NodeUnprepareResources"}} {unprepare_failed}'
    )
    return "\n".join(lines) + "\n"


def test_quantile_interpolates_inside_the_bucket_like_histogram_quantile():
    buckets = {0.1: 50.0, 0.2: 90.0, 0.4: 100.0, math.inf: 100.0}
    assert kubelet_latency.quantile(0.5, buckets) == pytest.approx(0.1)
    assert kubelet_latency.quantile(0.7, buckets) == pytest.approx(0.15)
    assert kubelet_latency.quantile(0.99, buckets) == pytest.approx(0.38)
    assert kubelet_latency.quantile(0.99, {0.5: 1.0, math.inf: 4.0}) == 0.5  # rank in +Inf: highest finite bound
    assert kubelet_latency.quantile(0.5, {math.inf: 0.0}) is None


def test_summary_sums_nodes_and_counts_failed_calls():
    # given two nodes' metrics for one driver
    a = _metrics("gpu.x", [("0.1", 1), ("0.2", 2), ("+Inf", 2)])
    b = _metrics("gpu.x", [("0.1", 1), ("0.2", 2), ("+Inf", 2)], unprepare_failed=1)
    # when summarized; then 4 prepares, p50 at the 0.1 s bound, one failed unprepare
    out = kubelet_latency.summarize([a, b])
    assert out["gpu.x"]["NodePrepareResources"] == {
        "calls": 4,
        "errors": 0,
        "p50_s": 0.1,
        "p99_s": 0.198,
        "p50_at_most_s": 0.1,
        "p99_at_most_s": 0.2,
    }
    assert out["gpu.x"]["NodeUnprepareResources"]["errors"] == 1


def test_record_writes_json_and_the_summary_line(monkeypatch, tmp_path):
    texts = {"n1": _metrics("gpu.x", [("0.05", 3), ("+Inf", 3)])}

    def read(k8s, node):
        if node not in texts:
            raise OSError("403 nodes/proxy")
        return texts[node]

    monkeypatch.setattr(kubelet_latency, "metrics", read)
    said = []
    doc = kubelet_latency.record(object(), ["n1", "n2"], tmp_path, said.append)
    assert doc["unreadable"] == {"n2": "403 nodes/proxy"}
    assert (
        json.loads((tmp_path / kubelet_latency.FILE).read_text())["drivers"]["gpu.x"]["NodePrepareResources"]["calls"]
        == 3
    )
    line = kubelet_latency.summary_line(tmp_path)
    assert "gpu.x: NodePrepareResources p50 0.025 s (<= 0.05) / p99 0.0495 s (<= 0.05) (3 calls" in line and said == [
        line.strip()
    ]
    assert kubelet_latency.summary_line(tmp_path / "absent") == ""


def test_the_run_teardown_records_latency_before_removing_anything(monkeypatch, tmp_path):
    order = []
    monkeypatch.setattr(kubelet_latency, "record", lambda k8s, nodes, d, progress: order.append(("latency", nodes)))
    monkeypatch.setattr(sweep, "sweep_run", lambda k8s, run_id, **_: order.append("sweep") or [])
    s = Session(from_options({"driver": "reference", "run_id": "r1", "report_dir": str(tmp_path)}), tmp_path, shipped())
    s.k8s, s.driver = object(), object()
    s.cluster = SimpleNamespace(nodes=[SimpleNamespace(name="node-0"), SimpleNamespace(name="node-1")])
    s.teardown()
    assert order == [("latency", ["node-0", "node-1"]), "sweep"]
