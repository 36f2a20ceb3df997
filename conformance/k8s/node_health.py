"""The run's nodes' health during a run, with timestamps (issue 27 §2: a node cut off is a fault of the cluster).

The health watcher (:class:`conformance.k8s.health.Watcher`, given the run's node names) also lists the Nodes every
:data:`EVERY` API samples (one ``GET /api/v1/nodes?resourceVersion=0``: served from the API server's watch cache,
one request whatever the number of nodes, never retried, bounded by ``health.PROBE_TIMEOUT``) while the API server
is ready, and keeps only the run's nodes. A node is bad when its ``Ready`` condition is not ``True``: ``Unknown``
(the node lifecycle controller's ``NodeStatusUnknown`` "Kubelet stopped posting node status." once the kubelet has
not reported for ``--node-monitor-grace-period``, 40-50 s), ``False`` (``KubeletNotReady``: runtime or network not
ready), no ``Ready`` condition, or the node missing from the list (deleted). Node samples go to the same
``cluster-health.jsonl`` with ``"scope": "nodes"``: ``{"t", "ok", "what": "node-not-ready"|"nodes-ready",
"scope": "nodes", "nodes": {name: "Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)"},
"detail"}``, logged on every change of the bad set and on a node's :data:`health.MIN_BAD`-th bad sample in a row.

:func:`outages` turns them into one :class:`~conformance.k8s.health.Outage` per node and window (``what``
``node-not-ready``, ``node`` its name; at least ``MIN_BAD`` samples in a row, so a one-sample blip is none), which
:mod:`conformance.reporting.cluster_fault` compares with failed tests exactly as the API server's outages.
:func:`down_evidence` lets a pod wait end early when its node has been down longer than a bound
(conformance/k8s/waits/pods.py), from the log the process follows (``health.follow``).

Sources: core/v1 NodeStatus ``conditions`` (type ``Ready``); the node lifecycle controller
(pkg/controller/nodelifecycle: ``NodeStatusUnknown``, "Kubelet stopped posting node status.",
``--node-monitor-grace-period``); kube-apiserver list semantics (``resourceVersion=0``: from the watch cache).
"""

from __future__ import annotations

import json
import time

from conformance.k8s import health

SCOPE = "nodes"
BAD = "node-not-ready"
GOOD = "nodes-ready"
EVERY = 5  # API samples (health.INTERVAL s each) between two node lists: one list every ~5 s
DOWN_BOUND_S = 60.0  # seconds (times --timeout-scale) a node is down before a pod wait on it ends (waits/pods.py)


def probe(k8s, names: list[str]) -> dict[str, str] | None:
    """The run's nodes ``names`` that are not Ready now, ``{name: "Ready=<status> (<reason>: <message>)"}``
    (``{}``: all Ready); None when the node list got no answer or no JSON (then no node sample is taken: the
    API server's own probe covers an API that does not answer). One request, never raises."""
    try:
        status, text = health._get(k8s, "/api/v1/nodes?resourceVersion=0", accept="application/json")
        items = json.loads(text).get("items", []) if status == 200 else None
    except Exception:  # noqa: BLE001 - no answer, no JSON: no sample
        return None
    if items is None:
        return None
    by_name = {(n.get("metadata") or {}).get("name"): n for n in items if isinstance(n, dict)}
    bad = {}
    for name in names:
        node = by_name.get(name)
        if node is None:
            bad[name] = "not in the node list (deleted)"
            continue
        ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        if not ready:
            bad[name] = "no Ready condition"
        elif ready[0].get("status") != "True":
            c = ready[0]
            bad[name] = f"Ready={c.get('status')} ({c.get('reason', '')}: {str(c.get('message', ''))[:200]})"
    return bad


def entry(bad: dict[str, str], now: float | None = None) -> dict:
    """The log line of one node sample (see the module docstring)."""
    detail = "; ".join(f"node {n}: {why}" for n, why in sorted(bad.items())) or "the run's nodes are Ready"
    t = round(time.time() if now is None else now, 3)
    return {"t": t, "ok": not bad, "what": BAD if bad else GOOD, "scope": SCOPE, "nodes": bad, "detail": detail}


def is_node(sample: dict) -> bool:
    """Whether a health-log sample is a node sample (the API server's outages ignore those)."""
    return sample.get("scope") == SCOPE


def outages(samples: list[dict]) -> list[health.Outage]:
    """One outage per node and window of the node samples in ``samples`` (as ``health.read`` returns): from the
    first sample naming the node bad to the first node sample that does not (or the log's last sample when the
    run ended first); only windows of at least ``health.MIN_BAD`` samples. Ordered by start."""
    nodes = [s for s in samples if is_node(s)]
    found: list[health.Outage] = []
    open_: dict[str, list[dict]] = {}
    for s in nodes:
        bad = s.get("nodes") or {}
        for name in [n for n in open_ if n not in bad]:
            found += _window(name, open_.pop(name), s["t"])
        for name in bad:
            open_.setdefault(name, []).append(s)
    end = samples[-1]["t"] if samples else 0.0
    for name, window in open_.items():
        found += _window(name, window, end)
    return sorted(found, key=lambda o: o.start)


def _window(name: str, window: list[dict], end: float) -> list[health.Outage]:
    if len(window) < health.MIN_BAD:
        return []
    detail = f"node {name}: {window[0]['nodes'][name]}"
    return [health.Outage(window[0]["t"], end, BAD, detail, (BAD,), node=name)]


def down_evidence(node: str, bound: float, now: float | None = None) -> str:
    """Evidence that ``node`` has been not Ready longer than ``bound`` seconds in the followed health log
    (``health.follow``), its outage still open: ``"node n1 not Ready since 19:11:47 UTC (75 s, health watcher):
    Ready=Unknown (...)"``; ``""`` when no log is followed, it cannot be read, or it shows no such outage. Never
    raises."""
    path = health.followed()
    if path is None or not node:
        return ""
    try:
        samples = health.read(path.parent)
    except OSError:
        return ""
    last = next((s for s in reversed(samples) if is_node(s)), None)
    if last is None or node not in (last.get("nodes") or {}):
        return ""
    mine = [o for o in outages(samples) if o.node == node and o.end == samples[-1]["t"]]
    now = time.time() if now is None else now
    if not mine or now - mine[-1].start < bound:
        return ""
    o = mine[-1]
    return (
        f"node {node} not Ready since {health._hms(o.start)} UTC ({now - o.start:.0f} s, health watcher): "
        + (last["nodes"][node][:300])
    )
