"""Latency statistics of the benchmark: percentiles and the summary block every workload result carries come
from :mod:`conformance.core.stats` (one copy, shared with the conformance report); pod throughput here. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.core.stats import QUANTILES, percentile, summary

__all__ = ["QUANTILES", "percentile", "summary", "throughput"]


def throughput(created: Sequence[float], done: Sequence[float]) -> float:
    """Pods per second: how many finished, over the span from the first creation to the last finish (0 when
    nothing finished)."""
    if not done or not created:
        return 0.0
    span = max(done) - min(created)
    return round(len(done) / span, 2) if span > 0 else 0.0
