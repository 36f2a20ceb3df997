"""Latency statistics: percentiles (linear interpolation between closest ranks, numpy's default ``linear``
method) and the summary block every workload result carries. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

QUANTILES = (0.5, 0.9, 0.99)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``; raises ValueError for an empty sequence or q outside 0..1."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside 0..1")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary(values: Sequence[float]) -> dict:
    """``{"count", "p50", "p90", "p99", "mean", "max"}`` in the values' unit (seconds); count 0 and None
    elsewhere when there are no values."""
    if not values:
        return {"count": 0, "p50": None, "p90": None, "p99": None, "mean": None, "max": None}
    out = {"count": len(values)}
    for q in QUANTILES:
        out[f"p{round(q * 100)}"] = round(percentile(values, q), 4)
    out["mean"] = round(sum(values) / len(values), 4)
    out["max"] = round(max(values), 4)
    return out


def throughput(created: Sequence[float], done: Sequence[float]) -> float:
    """Pods per second: how many finished, over the span from the first creation to the last finish (0 when
    nothing finished)."""
    if not done or not created:
        return 0.0
    span = max(done) - min(created)
    return round(len(done) / span, 2) if span > 0 else 0.0
