"""Samples of Prometheus text exposition (component ``/metrics``): the one parser the harness uses for
feature-gate metrics and kubelet plugin metrics.

Source: Prometheus text format 0.0.4 (``name{label="value",...} value``; label values escape ``\\``, ``"``).
"""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str, metric: str) -> list[tuple[dict[str, str], float]]:
    """``[(labels, value)]`` of every sample of ``metric`` (exact name) in ``text``; unparsable values skip."""
    out = []
    for name, labels, value in _SAMPLE.findall(text):
        if name != metric:
            continue
        try:
            out.append((dict(_LABEL.findall(labels or "")), float(value)))
        except ValueError:
            continue
    return out
