"""Percentiles, throughput and the benchmark's option checks (no cluster)."""

from __future__ import annotations

import pytest
from conformance_tools.bench import stats, workload
from conformance_tools.bench.config import BenchConfig, parse_points

from conformance.core.errors import ConfigError


def test_percentile_interpolates_between_closest_ranks():
    # given 1..100 s; when asked p50/p90/p99; then numpy's linear method's values
    values = [float(i) for i in range(1, 101)]
    assert stats.percentile(values, 0.5) == pytest.approx(50.5)
    assert stats.percentile(values, 0.9) == pytest.approx(90.1)
    assert stats.percentile(values, 0.99) == pytest.approx(99.01)
    assert stats.percentile([3.0], 0.99) == 3.0


def test_percentile_refuses_empty_and_out_of_range():
    with pytest.raises(ValueError, match="no values"):
        stats.percentile([], 0.5)
    with pytest.raises(ValueError, match="outside"):
        stats.percentile([1.0], 1.5)


def test_summary_shape_and_empty():
    assert stats.summary([1.0, 2.0, 3.0]) == {"count": 3, "p50": 2.0, "p90": 2.8, "p99": 2.98, "mean": 2.0, "max": 3.0}
    assert stats.summary([])["p99"] is None


def test_throughput_spans_first_create_to_last_bound():
    assert stats.throughput([0.0, 1.0], [2.0, 4.0]) == 0.5
    assert stats.throughput([0.0], []) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"nodes": -1}, "--nodes"),
        ({"nodes": 0}, "--nodes"),
        ({"devices": 1}, "--devices"),
        ({"pods": 0}, "--pods"),
        ({"scale_points": (10, -5)}, "--scale-points"),
        ({"variants": ("template", "nope")}, "--variants"),
        ({"timeout": 0}, "--timeout"),
    ],
)
def test_bad_options_name_the_option_and_the_fix(kwargs, option):
    with pytest.raises(ConfigError) as err:
        BenchConfig(**kwargs).validate()
    assert option in str(err.value) and "fix:" in str(err.value)


def test_points_include_the_main_size_ascending():
    assert BenchConfig(nodes=50, scale_points=(500, 10)).points() == [10, 50, 500]
    assert parse_points(" 10, 100 ,") == (10, 100)
    with pytest.raises(ConfigError, match="not a node count"):
        parse_points("10,ten")


def test_pods_are_capped_at_what_the_fleet_holds():
    # given 100 nodes x 8 devices: 800 single-device pods, 400 pairs, 4 pods per shared device
    assert workload.pods_for("template", 100, 8, 1000, 4) == 800
    assert workload.pods_for("match-attribute", 100, 8, 1000, 4) == 400
    assert workload.pods_for("shared", 100, 8, 1000, 4) == 1000
    assert workload.pods_for("classic", 10, 8, 40, 4) == 40


def test_client_qps_flags_for_scheduler_and_controller_manager():
    from conformance_tools.bench.run import _qps_args

    assert _qps_args(500)["kube-scheduler"] == ("--kube-api-qps=500", "--kube-api-burst=500")
    assert _qps_args(0) == {"kube-scheduler": (), "kube-controller-manager": ()}
    with pytest.raises(ConfigError, match="--client-qps"):
        BenchConfig(client_qps=-1).validate()
