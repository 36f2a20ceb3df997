"""Timing of the NodePrepareResources / NodeUnprepareResources calls the suite makes itself (the driver-contract
tests dial the driver's DRAPlugin socket, :class:`conformance.node.draplugin.DraPluginClient`): one JSON line per
call appended to ``<report dir>/dra-call-timings.jsonl``, read at report time by
:mod:`conformance.reporting.dra_latency`.

Each line: ``{"driver", "node", "method", "claims", "s", "ok", "via"}``; ``s``: seconds (float, from
``time.perf_counter``, so sub-millisecond resolution, unlike the kubelet histogram whose first bucket is 0.1 s);
``via``: ``direct`` (this host dialed the socket: the figure includes only the gRPC round trip) or ``relay``
(a privileged helper pod dialed it, :mod:`conformance.node.exec_grpc`, and timed the call inside the pod, so
the ``kubectl exec`` overhead is not counted). xdist workers append to the same file: every line is one
``write`` under ``O_APPEND`` and shorter than ``PIPE_BUF``, so lines never interleave.
Source: k8s.io/kubelet/pkg/apis/dra/v1 ``DRAPlugin`` (the methods timed); issue 26 §4.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "dra-call-timings.jsonl"
_SINK: dict[str, Path] = {}  # "path": where to append; empty: not recording


def configure(report_dir: Path | str | None) -> None:
    """Append timings to ``report_dir/dra-call-timings.jsonl`` from now on (None: stop recording)."""
    _SINK.clear()
    if report_dir:
        _SINK["path"] = Path(report_dir) / FILE


def record(driver: str, node: str, method: str, claims: int, seconds: float, ok: bool, via: str) -> None:
    """Append one call's timing; a no-op when no report directory is configured or the file cannot be written
    (a missing figure must never fail a test)."""
    sink = _SINK.get("path")
    if sink is None:
        return
    line = {"driver": driver, "node": node, "method": method, "claims": claims, "s": round(seconds, 6)}
    line.update(ok=ok, via=via)
    data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
    try:
        sink.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(sink, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return


def load(report_dir: Path | str) -> list[dict]:
    """Every timing line of ``report_dir`` (``[]`` when none); lines that do not parse are skipped."""
    path = Path(report_dir) / FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("s"), (int, float)):
            out.append(row)
    return out
