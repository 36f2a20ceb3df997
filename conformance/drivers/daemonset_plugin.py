"""Restarting the kubelet plugin of a DaemonSet-deployed driver (helm, manifests) on one node: delete the node's
plugin pod and wait for the DaemonSet's new pod to run Ready there, as an operator (or a crash) restarts it
(issue 24 §3: the plugin-restart tests and their faults also for Helm-deployed drivers).

Source: apps/v1 DaemonSet (the controller replaces a deleted pod on its node); upstream test/e2e_node/dra_test.go
"must be functional after service reconnect" (a restarted plugin serves again).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.dra.placement import runs_kubelet_plugin
from conformance.drivers import surge
from conformance.drivers.base import DeployedDriver
from conformance.drivers.readiness import await_daemonsets
from conformance.k8s import waits
from conformance.k8s.client import K8s


def _ready(pod: Obj) -> bool:
    conditions = pod.get("status.conditions") or []
    return pod.get("metadata.deletionTimestamp") is None and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def plugin_pods(k8s: K8s, namespaces: Iterable[str], node: str) -> list[Obj]:
    """The pods on ``node`` of the DaemonSets in ``namespaces`` that run a kubelet plugin
    (:func:`conformance.dra.placement.runs_kubelet_plugin`), any state."""
    out = []
    for ns in namespaces:
        sets = {ds.name for ds in k8s.list("DaemonSet", ns) if runs_kubelet_plugin(ds)}
        for pod in k8s.list("Pod", ns, field_selector=f"spec.nodeName={node}"):
            owners = pod.get("metadata.ownerReferences") or []
            if any(o.get("kind") == "DaemonSet" and o.get("name") in sets for o in owners):
                out.append(pod)
    return out


def restart_plugin_pods(k8s: K8s, namespaces: Iterable[str], node: str, timeout: float, driver: str = "") -> list[Obj]:
    """Delete the plugin pods of ``node`` (:func:`plugin_pods`) and wait until as many new ones (other UIDs)
    run Ready there; returns the new pods. Raises KeyError when the node has none, DriverNotReady naming the
    node and the pods seen when the new ones are not Ready within ``timeout`` seconds."""
    namespaces = tuple(namespaces)
    old = plugin_pods(k8s, namespaces, node)
    if not old:
        raise KeyError(f"no kubelet-plugin DaemonSet pod on node {node!r} in namespace(s) {list(namespaces)}")
    for pod in old:
        k8s.unguarded().delete("Pod", pod.name, pod.namespace)
    gone = {p.uid for p in old}
    fresh: list[Obj] = []

    def replaced() -> bool:
        fresh[:] = [p for p in plugin_pods(k8s, namespaces, node) if p.uid not in gone]
        return len(fresh) >= len(old) and all(_ready(p) for p in fresh)

    if not waits.poll(replaced, timeout=timeout, interval=1.0):
        seen = [f"{p.name} ({p.get('status.phase')}, ready={_ready(p)})" for p in fresh]
        raise errors.DriverNotReady(
            driver, f"new Ready plugin pods on node {node} replacing {[p.name for p in old]}", f"new pods seen: {seen}"
        )
    return fresh


def _recreatable(ds: Obj) -> dict:
    """The DaemonSet as it can be created again: no status, server-set metadata or controller-set fields."""
    meta = {k: v for k, v in ds.raw["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": ds.raw["spec"]}


@dataclasses.dataclass
class DaemonSetDriver(DeployedDriver):
    """A driver whose kubelet plugins are DaemonSet pods in ``daemonset_namespaces``; it restarts the plugin
    on a node by replacing its pod (:class:`conformance.core.handles.RestartsPlugin`) and removes and
    reinstalls its plugin DaemonSets (:class:`conformance.core.handles.RemovesDriver`: DeviceClasses, RBAC and
    the nodes' state stay, as ``kubectl delete daemonset`` and a re-apply of it do). ``k8s``: the deployer's
    client."""

    k8s: K8s | None = None
    removed: list[dict] = dataclasses.field(default_factory=list)
    strategies: dict[str, dict] = dataclasses.field(default_factory=dict)  # before surge_update(), for restore

    def _client(self) -> K8s:
        if self.k8s is None:
            raise RuntimeError(f"driver {self.name}: this handle has no Kubernetes client to change its DaemonSets")
        return self.k8s

    def remove_driver(self) -> None:
        """Delete the plugin DaemonSets and wait until their pods are gone from every node. Idempotent."""
        k8s = self._client()
        for ns in self.daemonset_namespaces:
            for ds in (d for d in k8s.list("DaemonSet", ns) if runs_kubelet_plugin(d)):
                self.removed.append(_recreatable(ds))
                k8s.unguarded().delete("DaemonSet", ds.name, ns)
        names = {d["metadata"]["name"] for d in self.removed}

        def pods_gone() -> bool:
            pods = [p for ns in self.daemonset_namespaces for p in k8s.list("Pod", ns)]
            return not any(o.get("name") in names for p in pods for o in p.get("metadata.ownerReferences") or [])

        if not waits.poll(pods_gone, timeout=timeouts.POD_DELETE, interval=1.0):
            raise errors.DriverNotReady(self.name, f"the pods of DaemonSets {sorted(names)} gone", "still running")

    def reinstall_driver(self) -> None:
        """Create the removed DaemonSets again and wait until each runs a Ready pod on its nodes (raises
        DriverNotReady with its status); nothing to do when none was removed."""
        k8s, again = self._client(), list(self.removed)
        for doc in again:
            k8s.unguarded().create(doc)
        self.removed.clear()
        refs = [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in again]
        await_daemonsets(k8s, self.name, refs, timeout=timeouts.PLUGIN_REGISTRATION * 5)

    def restart_plugin(self, node: str) -> None:
        """Replace the plugin pod on ``node`` and wait for the new one to be Ready (:func:`restart_plugin_pods`).
        Raises KeyError naming the node when it runs none; RuntimeError when the handle has no client."""
        if self.k8s is None:
            raise RuntimeError(f"driver {self.name}: this handle has no Kubernetes client to restart plugin pods")
        restart_plugin_pods(self.k8s, self.daemonset_namespaces, node, timeouts.PLUGIN_REGISTRATION * 4, self.name)

    def can_surge_update(self) -> tuple[bool, str]:
        """``(able, evidence)``: able when the profile's deploy block declares ``rolling_update: surge``
        (:mod:`conformance.drivers.surge`) and the handle has a client."""
        if self.k8s is None:
            return False, "this driver handle has no Kubernetes client to update its DaemonSets"
        if not surge.declared(self.profile.deploy):
            return False, (
                f"profile {self.profile.name} does not declare rolling_update: surge in its deploy block (two "
                "plugin instances per node during a DaemonSet rolling update)"
            )
        return True, f"the {self.deploy_mode} deployer updates the plugin DaemonSets with maxSurge 1, maxUnavailable 0"

    def surge_update(self, node: str = "") -> None:
        """Roll every plugin DaemonSet with maxSurge 1 / maxUnavailable 0 (:func:`surge.roll`) and wait until
        each node runs only new Ready plugin pods; ``node`` (the test's) must have had a plugin pod and run a new
        one (UID changed). Raises DriverNotReady naming the nodes still rolling, or what was not found. The
        strategies are saved before each patch, so a failed roll is still restored."""
        surge.roll(
            self._client(),
            self.name,
            self.daemonset_namespaces,
            timeouts.PLUGIN_REGISTRATION * 5,
            self.strategies,
            node,
        )

    def restore_update_strategy(self) -> None:
        """Put back the DaemonSets' update strategies of before :meth:`surge_update` (no pod changes). Idempotent."""
        surge.restore(self._client(), self.strategies)
        self.strategies.clear()
