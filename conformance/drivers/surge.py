"""A rolling update with surge of a DaemonSet-deployed driver: every plugin DaemonSet gets the update strategy
RollingUpdate with maxSurge 1 / maxUnavailable 0 and a new pod-template annotation, so on each node the
DaemonSet controller starts the new plugin pod beside the old one and deletes the old one once the new one is
Ready. Two instances of the driver then run on a node at once; a driver supports that only when each instance
listens on sockets of its own (the kubeletplugin library's ``RollingUpdate(uid)`` option, kubelet >= 1.33).

A profile declares the support with ``rolling_update: surge`` in its helm or manifests deploy block; without
it the test skips ("not claimed"). A customer's driver (``preinstalled``) is never updated.

Sources: apps/v1 DaemonSet ``spec.updateStrategy.rollingUpdate.maxSurge``; kubelet pluginwatcher README
"Seamless Upgrade" (each instance a unique socket file name); KEP-4381 (kubelet 1.33: several registrations of
one DRA driver, the newest serves).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.dra.placement import runs_kubelet_plugin
from conformance.k8s import waits
from conformance.k8s.client import K8s

SURGE = "surge"
KEY = "rolling_update"
ROLLED_AT = "dra-conformance.test/rolled-at"  # the pod-template annotation that starts the rollout
STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def declared(deploy: Mapping[str, Any], field: str = "deploy.rolling_update", source: str = "") -> bool:
    """Whether the deploy block declares ``rolling_update: surge``. Raises ConfigError naming ``source`` and
    ``field`` for any other value. Called when a profile is loaded, so a typo is refused before a cluster."""
    value = deploy.get(KEY)
    if value is None:
        return False
    if value != SURGE:
        raise errors.ConfigError(
            f"rolling_update must be {SURGE!r}, got {value!r}",
            source=source,
            field=field,
            fix="rolling_update: surge (the chart runs two plugin instances per node, sockets named per pod UID), "
            "or leave the key out",
        )
    return True


def _ready(pod: Obj) -> bool:
    conditions = pod.get("status.conditions") or []
    return pod.get("metadata.deletionTimestamp") is None and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def _pods_by_node(k8s: K8s, namespace: str, name: str) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for pod in k8s.list("Pod", namespace):
        if any(
            o.get("kind") == "DaemonSet" and o.get("name") == name for o in pod.get("metadata.ownerReferences") or []
        ):
            out.setdefault(pod.get("spec.nodeName") or "", []).append(pod)
    return out


def roll(
    k8s: K8s, driver: str, namespaces: Iterable[str], timeout: float, original: dict[str, dict], node: str = ""
) -> None:
    """Update every plugin DaemonSet of ``namespaces`` with surge (see module docstring) and wait until on each
    of its nodes the pods that ran before are gone and as many new ones run Ready. Fills ``original``
    (``{"<ns>/<name>": updateStrategy}``, for :func:`restore`) BEFORE each patch, so a roll that fails half-way
    still leaves every patched DaemonSet restorable.

    Raises DriverNotReady naming ``driver`` and what was looked for when no DaemonSet of ``namespaces`` runs a
    kubelet plugin (a hostPath ending in ``plugins_registry``: nothing rolled would pass the test untested), when
    ``node`` is given and no rolled DaemonSet ran a plugin pod there, or when that node's plugin pod is not a new
    one afterwards (the UIDs of before still there, or none Ready); and naming the nodes still rolling, with
    their pods, when the rollout takes more than ``timeout`` seconds."""
    namespaces = list(namespaces)
    stamp = datetime.datetime.now(datetime.UTC).isoformat()
    old_on_node: set[str] = set()
    for ns in namespaces:
        for ds in (d for d in k8s.list("DaemonSet", ns) if runs_kubelet_plugin(d)):
            before = _pods_by_node(k8s, ns, ds.name)
            old_on_node |= {p.uid for p in before.get(node, [])} if node else set()
            original.setdefault(f"{ns}/{ds.name}", ds.get("spec.updateStrategy") or {})
            patch = {
                "spec": {"updateStrategy": STRATEGY, "template": {"metadata": {"annotations": {ROLLED_AT: stamp}}}}
            }
            k8s.unguarded().patch("DaemonSet", ds.name, patch, ns)
            _await_replaced(k8s, driver, ns, ds.name, before, timeout)
    if not original:
        raise errors.DriverNotReady(
            driver,
            f"a plugin DaemonSet in namespaces {namespaces} to roll with surge (a hostPath volume ending in "
            "plugins_registry)",
            "none found: nothing was rolled",
        )
    if node:
        _check_new_on(k8s, driver, node, namespaces, original, old_on_node)


def _check_new_on(
    k8s: K8s, driver: str, node: str, namespaces: list[str], rolled: Mapping[str, dict], old: set[str]
) -> None:
    """Raise DriverNotReady unless a rolled DaemonSet ran a plugin pod on ``node`` before (UIDs ``old``) and
    every plugin pod there now is a new, Ready one (a UID not in ``old``)."""
    if not old:
        raise errors.DriverNotReady(
            driver, f"a plugin pod of DaemonSets {sorted(rolled)} on node {node} before the roll", "none ran there"
        )
    now = [p for ref in rolled for p in _pods_by_node(k8s, *ref.split("/", 1)).get(node, [])]
    if not now or any(p.uid in old for p in now) or not all(map(_ready, now)):
        raise errors.DriverNotReady(
            driver,
            f"a new Ready plugin pod on node {node} (a UID other than {sorted(old)})",
            f"pods there now: {[(p.name, p.uid, _ready(p)) for p in now]}",
        )


def _await_replaced(k8s: K8s, driver: str, ns: str, name: str, before: dict[str, list[Obj]], timeout: float) -> None:
    old = {p.uid for pods in before.values() for p in pods}
    rolling: dict[str, list[str]] = {}

    def replaced() -> bool:
        now = _pods_by_node(k8s, ns, name)
        rolling.clear()
        for node, pods in before.items():
            fresh = [p for p in now.get(node, []) if p.uid not in old]
            if any(p.uid in old for p in now.get(node, [])) or len(fresh) < len(pods) or not all(map(_ready, fresh)):
                rolling[node] = [f"{p.name} ({p.get('status.phase')}, ready={_ready(p)})" for p in now.get(node, [])]
        return not rolling

    if not waits.poll(replaced, timeout=timeout, interval=1.0):
        raise errors.DriverNotReady(
            driver, f"DaemonSet {ns}/{name} rolled with surge on every node", f"still rolling: {rolling}"
        )


def restore(k8s: K8s, original: Mapping[str, dict]) -> None:
    """Put back the update strategies :func:`roll` returned (changes no pod: the strategy is not part of the
    pod template). A DaemonSet gone meanwhile is skipped."""
    for ref, strategy in original.items():
        ns, name = ref.split("/", 1)
        try:
            k8s.unguarded().patch("DaemonSet", name, {"spec": {"updateStrategy": strategy}}, ns)
        except errors.NotFound:
            continue
