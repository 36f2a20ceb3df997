"""Latency statistics shared by the conformance report and the kwok benchmark: percentiles (linear
interpolation between closest ranks, numpy's default ``linear`` method / Hyndman & Fan type 7) and the summary
block every latency figure carries. Pure."""

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


def summary(values: Sequence[float], digits: int = 4) -> dict:
    """``{"count", "p50", "p90", "p99", "mean", "max"}`` in the values' unit (seconds), rounded to ``digits``
    decimals; count 0 and None elsewhere when there are no values. One sort: O(n log n)."""
    if not values:
        return {"count": 0, "p50": None, "p90": None, "p99": None, "mean": None, "max": None}
    ordered = sorted(values)
    out = {"count": len(ordered)}
    for q in QUANTILES:
        out[f"p{round(q * 100)}"] = round(percentile(ordered, q), digits)
    out["mean"] = round(sum(ordered) / len(ordered), digits)
    out["max"] = round(ordered[-1], digits)
    return out
