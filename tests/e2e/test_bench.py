"""`dra-conformance bench` end to end at a small scale (5 kwok nodes x 4 devices, 40 pods): every workload binds
every pod, the report has its JSON, plots and summary, and the tear-down leaves no cluster, fleet or object.
Brings up its own local cluster (slot chosen like a conformance run's, no kube-proxy), so it runs beside the
shared cluster in make test's parallel phase."""

from __future__ import annotations

import json
import os

import pytest
from conformance_lab.local.config import STATE_ROOT
from conformance_tools.bench.config import VARIANTS, BenchConfig
from conformance_tools.bench.run import bench

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]  # 65 s alone; beside 3 workers' runs more


def test_small_bench_measures_every_workload_and_cleans_up(tmp_path):
    # given a 5-node fleet of 4 devices, 40 pods per workload, one extra scale point
    cfg = BenchConfig(
        nodes=5,
        devices=4,
        pods=40,
        scale_points=(2,),
        out_dir=str(tmp_path / "bench"),
        html=bool(os.environ.get("DRA_CONFORMANCE_ALLURE")),
    )
    lines: list[str] = []
    # when the benchmark runs
    code = bench(cfg, tmp_path, progress=lines.append)
    # then it succeeded and measured every workload at the main point, template+classic at the small one
    assert code == 0, "\n".join(lines[-30:])
    data = json.loads((tmp_path / "bench" / "bench.json").read_text())
    got = {(r["nodes"], r["variant"]) for r in data["results"]}
    assert got == {(5, v) for v in (*VARIANTS, "classic")} | {(2, "template"), (2, "classic")}
    for r in data["results"]:
        assert r["bound"] == r["pods"] > 0, r
        assert r["throughput_pods_per_s"] > 0 and r["latency_s"]["pod_bound"]["p99"] is not None, r
        assert (r["latency_s"]["claim_allocated"] is None) == (r["variant"] == "classic"), r
    assert {r["pods"] for r in data["results"] if r["nodes"] == 5 and r["variant"] == "match-attribute"} == {10}
    assert [row["nodes"] for row in data["dra_over_classic"]] == [2, 5]
    for name in ("scale.png", "variants.png", "summary.md"):
        assert (tmp_path / "bench" / name).stat().st_size > 0, name
    # and the tear-down left nothing: fleet stopped after deleting its slices, cluster state gone
    assert any(line.startswith("fleet stopped (exit 0)") for line in lines), lines[-10:]
    assert not any("TEARDOWN PROBLEM" in line for line in lines), lines
    assert not (STATE_ROOT / f"b{data['id'][-4:]}").exists()
