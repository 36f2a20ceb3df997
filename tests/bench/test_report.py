"""bench.json shape, DRA/classic ratios, the plots and summary.md, the Allure results (no cluster)."""

from __future__ import annotations

import json

from conformance_tools.bench import report, stats


def _result(variant: str, nodes: int, tput: float, p50: float) -> dict:
    lat = stats.summary([p50, p50 * 2])
    return {
        "variant": variant,
        "nodes": nodes,
        "pods": 2,
        "bound": 2,
        "wall_s": 1.0,
        "create_s": 0.1,
        "throughput_pods_per_s": tput,
        "latency_s": {"claim_allocated": None if variant == "classic" else lat, "pod_bound": lat},
        "pending": None,
        "watch_errors": [],
        "devices_per_node": 8,
        "pods_requested": 2,
    }


def _data() -> dict:
    results = [
        _result("template", 10, 40.0, 0.2),
        _result("classic", 10, 80.0, 0.1),
        _result("template", 100, 30.0, 0.3),
        _result("cel", 100, 28.0, 0.35),
        _result("classic", 100, 60.0, 0.1),
    ]
    return report.build("b-1", {"nodes": 100, "devices": 8}, {"kubernetes": "v1.34.4"}, results, 0.0, 12.0)


def test_json_shape_and_ratios():
    data = _data()
    assert data["schema"] == "dra-tools/conformance_tools/bench/v1" and data["wall_s"] == 12.0
    assert data["machine"]["cpus"] >= 1
    assert data["dra_over_classic"] == [
        {"nodes": 10, "throughput": 0.5, "bound_p50": 2.0, "bound_p99": 2.0},
        {"nodes": 100, "throughput": 0.5, "bound_p50": 3.0, "bound_p99": 3.0},
    ]
    assert {f["ours"] for f in data["upstream"]["figures"]} == {"template", "cel", "match-attribute"}


def test_write_puts_json_plots_summary_and_allure_results(tmp_path):
    # when the report is written without the HTML
    written = report.write(tmp_path, _data(), html=False)
    # then the JSON round-trips, both plots are PNGs, the summary names them and the ratio, Allure has 5 results
    assert json.loads((tmp_path / "bench.json").read_text())["id"] == "b-1"
    for name in ("variants.png", "scale.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert name in written
    md = (tmp_path / "summary.md").read_text()
    assert (
        "variants.png" in md
        and "DRA / classic" in md
        and "| 100 | cel |" in md
        and "| SchedulingWithResourceClaimTemplate/selector_empty_500nodes | 243 | 6 | cel | 28 (100 nodes)" in md
    )
    results = [json.loads(p.read_text()) for p in (tmp_path / "allure-results").glob("*-result.json")]
    assert sorted(r["name"] for r in results) == [
        "cel @ 100 nodes",
        "classic @ 10 nodes",
        "classic @ 100 nodes",
        "template @ 10 nodes",
        "template @ 100 nodes",
    ]
    assert {a["name"] for a in results[0]["attachments"]} == {"bench.json", "variants.png", "scale.png"}


def test_summary_names_a_mirrored_model_and_a_run_cut_short():
    data = _data()
    data["cluster"]["mirror"] = {
        "driver": "gpu.example.com",
        "source_node": "n0",
        "slices_per_node": 1,
        "devices_per_node": 12,
        "counter_sets_per_node": 2,
        "partitioned": True,
        "units_per_node": 2,
    }
    data["cut_short"] = True
    text = report.markdown(data, [])
    assert "12 mirrored devices per node" in text and "Cut short by an error" in text
    assert "Mirrored device model: gpu.example.com as published on node n0: 1 slice(s), 12 device(s)" in text
    assert "Mirrored" not in report.markdown(_data(), [])
