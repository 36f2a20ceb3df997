"""The kubelet's own NodePrepareResources / NodeUnprepareResources spans, read from its log: the kubelet's DRA
plugin client logs ``"Calling NodePrepareResources rpc"`` before and ``"Done calling NodePrepareResources rpc"``
after each call (and the same for NodeUnprepareResources; the "Calling" line of unprepare says
``NodeUnprepareResource``), at verbosity 4 with klog's microsecond timestamps. The lab's local kubelets run
with ``--vmodule=dra_plugin=4`` so that only these lines are added.

Source: kubernetes v1.34 pkg/kubelet/cm/dra/plugin/dra_plugin.go ``DRAPlugin.NodePrepareResources`` /
``NodeUnprepareResources`` (``logger.V(4).Info``); klog text header ``Lmmdd hh:mm:ss.uuuuuu pid file:line]``.
A span is paired with its call by the claim UIDs in the request and response (the response is nil when the
call failed: then the oldest open call of that method is taken). Spans are in seconds (µs resolution).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable
from pathlib import Path

from conformance.core.handles import HasComponentLogs

FILE = "kubelet-dra-spans.json"
LINE = re.compile(
    r"^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2}\.\d+)\s+\d+ dra_plugin\.go:\d+\] "
    r'"(Calling|Done calling) Node(Prepare|Unprepare)Resources? rpc"(.*)$'
)
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DRIVER = re.compile(r'driverName="([^"]*)"')
FAILED = re.compile(r'\berr="(?!<nil>")')  # a nil error is printed as err=<nil> or err=null
VMODULE = "--vmodule=dra_plugin=4"  # what a kubelet needs for these lines (the lab's local kubelets have it)


def _stamp(m: re.Match) -> float:
    """Seconds since an arbitrary origin from a klog header (no year: a leap year keeps Feb 29 valid)."""
    month, day, hour, minute = (int(m.group(i)) for i in range(1, 5))
    base = datetime.datetime(2000, month, day, hour, minute, tzinfo=datetime.UTC).timestamp()
    return base + float(m.group(5))


def spans(lines: Iterable[str], node: str = "") -> list[dict]:
    """``[{"driver", "node", "method", "s", "ok", "claims"}]`` from kubelet log ``lines`` (any other line is
    skipped; a single pass, open calls kept per method). ``method``: NodePrepareResources or
    NodeUnprepareResources; ``s``: seconds between the two log lines."""
    open_calls: dict[str, list[tuple[float, frozenset, str]]] = {"Prepare": [], "Unprepare": []}
    out = []
    for line in lines:
        if "dra_plugin.go" not in line:
            continue
        m = LINE.match(line)
        if not m:
            continue
        kind, verb, rest = m.group(6), m.group(7), m.group(8)
        uids, driver = frozenset(UID.findall(rest)), DRIVER.search(rest)
        driver_name = driver.group(1) if driver else ""
        pending = open_calls[verb]
        if kind == "Calling":
            pending.append((_stamp(m), uids, driver_name))
            continue
        match = next((c for c in pending if uids and c[1] & uids), None) or next(
            (c for c in pending if not driver_name or c[2] in ("", driver_name)), None
        )
        if match is None:
            continue
        pending.remove(match)
        took = _stamp(m) - match[0]
        if took < 0:  # across a new year
            continue
        out.append(
            {
                "driver": driver_name or match[2],
                "node": node,
                "method": f"Node{verb}Resources",
                "s": round(took, 6),
                "ok": not FAILED.search(rest),
                "claims": len(match[1]),
            }
        )
    return out


def from_log_dir(log_dir: Path) -> tuple[list[dict], str]:
    """``(spans, reason)`` from every ``<node>-kubelet.log`` in ``log_dir`` (the lab's layout); ``reason``
    says why there are none ("" when there are some)."""
    files = sorted(Path(log_dir).glob("*-kubelet.log"))
    if not files:
        return [], f"no *-kubelet.log in {log_dir}"
    out: list[dict] = []
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as fh:
            out.extend(spans(fh, node=path.name[: -len("-kubelet.log")]))
    if out:
        return out, ""
    names = ", ".join(p.name for p in files)
    return [], f"no DRAPlugin call lines in {names}: the kubelet logs them at verbosity 4 (start it with {VMODULE})"


def record(cluster, report_dir: Path) -> dict:
    """Write ``report_dir/kubelet-dra-spans.json``: ``{"available": bool, "reason": str, "spans": [...]}``;
    returns it. A cluster whose component logs are not files on this host (an existing cluster) gets
    ``available: false`` and the reason. Never raises."""
    if isinstance(cluster, HasComponentLogs):
        try:
            found, reason = from_log_dir(Path(cluster.log_dir))
        except OSError as exc:
            found, reason = [], f"kubelet logs in {cluster.log_dir} unreadable: {exc}"
    else:
        found, reason = (
            [],
            (
                "the cluster's kubelet logs are not files this host can read (existing cluster); the kubelet logs its "
                f"DRAPlugin calls only at verbosity 4 ({VMODULE})"
            ),
        )
    doc = {"available": bool(found), "reason": reason, "spans": found}
    try:
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        (Path(report_dir) / FILE).write_text(json.dumps(doc) + "\n", encoding="utf-8")
    except OSError:
        pass
    return doc


def load(report_dir: Path) -> dict | None:
    """The document :func:`record` wrote, or None when absent or unreadable."""
    try:
        return json.loads((Path(report_dir) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
