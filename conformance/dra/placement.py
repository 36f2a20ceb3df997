"""Which nodes a DaemonSet asks for: the nodes its controller places a pod on (pure: API objects in, names out).

A DaemonSet schedules a pod on a node when the node matches the pod template's ``nodeSelector`` and its required
node affinity, and the template tolerates every NoSchedule/NoExecute taint of the node (the controller adds the
tolerations of :data:`AUTO_TOLERATED` itself). Source: k8s pkg/controller/daemon ``NodeShouldRunDaemonPod`` and
util ``AddOrUpdateDaemonPodTolerations``; component-helpers nodeaffinity ``GetRequiredNodeAffinity``;
core/v1 Toleration semantics (``ToleratesTaint``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from conformance.core.objects import Obj

# taint keys every DaemonSet pod tolerates (added by the DaemonSet controller; network-unavailable only for
# hostNetwork pods, accepted here for all: the driver's plugin pods are host-level anyway)
AUTO_TOLERATED = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/network-unavailable",
    }
)


def _requirement(req: Mapping, values: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against ``values``."""
    key, op, want = req.get("key", ""), req.get("operator", ""), list(req.get("values") or [])
    has, value = key in values, values.get(key, "")
    if op == "In":
        return has and value in want
    if op == "NotIn":
        return not has or value not in want
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and want:
        try:
            return int(value) > int(want[0]) if op == "Gt" else int(value) < int(want[0])
        except ValueError:
            return False
    return False


def _term(term: Mapping, node: Obj) -> bool:
    """A NodeSelectorTerm: all its matchExpressions (labels) and matchFields (``metadata.name``) hold."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node (core/v1 NodeSelectorTerm)
    labels = node.get("metadata.labels") or {}
    return all(_requirement(r, labels) for r in exprs) and all(
        _requirement(r, {"metadata.name": node.name}) for r in fields
    )


def _tolerated(taint: Mapping, tolerations: Iterable[Mapping]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute") or taint.get("key") in AUTO_TOLERATED:
        return True
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def places_pod(daemonset: Obj, node: Obj) -> bool:
    """True when the DaemonSet controller would run ``daemonset``'s pod on ``node`` (module docstring)."""
    spec = daemonset.get("spec.template.spec") or {}
    labels = node.get("metadata.labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms")
    if terms is not None and not any(_term(t, node) for t in terms):
        return False
    tolerations = spec.get("tolerations") or []
    return all(_tolerated(t, tolerations) for t in node.get("spec.taints") or [])


def daemonset_nodes(daemonsets: Iterable[Obj], nodes: Iterable[Obj]) -> list[str]:
    """Sorted names of the ``nodes`` on which any of ``daemonsets`` places a pod (:func:`places_pod`)."""
    nodes = list(nodes)
    return sorted({n.name for ds in daemonsets for n in nodes if places_pod(ds, n)})


def runs_kubelet_plugin(daemonset: Obj) -> bool:
    """True when the DaemonSet's pods mount the kubelet's plugin registration directory (a hostPath ending in
    ``plugins_registry``): a kubelet plugin such as a DRA driver (KEP-4381 plugin registration)."""
    volumes = daemonset.get("spec.template.spec.volumes") or []
    return any(str((v.get("hostPath") or {}).get("path", "")).rstrip("/").endswith("plugins_registry") for v in volumes)
