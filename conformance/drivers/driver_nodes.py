"""The expected driver nodes: the nodes the driver's deployment asks to run it on (issue 24 §2), so "every
node" in KEP5970-1/-2, the smoke test and ``multi_node`` is never read from the driver's own slices.

Sources, first that applies: host mode -- the nodes the harness started a plugin process on
(``driver.processes``); DaemonSet deployments (helm, manifests) -- the nodes the DaemonSet controller places a
pod of the driver's DaemonSets on (:mod:`conformance.dra.placement`), the DaemonSets of the handle's
``daemonset_namespaces`` that mount the kubelet's plugin registry; preinstalled -- the DaemonSets of any
namespace that mount the plugin registry and name the driver in their pod template. When none is found (a
driver run some other way) the expected nodes fall back to the nodes with the driver's slices, and
``known`` is False (the report says so).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping

from conformance.core import errors
from conformance.core.handles import DriverHandle
from conformance.core.objects import Obj
from conformance.dra.inventory import Inventory
from conformance.dra.placement import daemonset_nodes, runs_kubelet_plugin
from conformance.k8s.client import K8s


@dataclasses.dataclass(frozen=True)
class ExpectedNodes:
    """``names``: sorted node names; ``source``: how they were derived (evidence, one line); ``known``: False
    when no deployment was found and the names are the nodes with the driver's slices."""

    names: tuple[str, ...]
    source: str
    known: bool = True

    def mismatch(self, seen: Iterable[str] | Mapping[str, int], what: str) -> str | None:
        """None when ``seen`` (nodes where the driver shows ``what``, e.g. "devices"; a ``{node: count}``
        mapping counts the nodes with a count > 0; ``<all nodes>``-style keys are not nodes) equals
        :attr:`names`; else a message naming the missing and the unexpected nodes and the source."""
        counts = seen if isinstance(seen, Mapping) else dict.fromkeys(seen, 1)
        seen = {n for n, c in counts.items() if c and not n.startswith("<")}
        missing, extra = sorted(set(self.names) - seen), sorted(seen - set(self.names))
        if not missing and not extra:
            return None
        parts = [f"the driver shows no {what} on node(s) {missing}"] if missing else []
        parts += [f"it shows {what} on node(s) {extra} it was not deployed to"] if extra else []
        return f"{'; '.join(parts)} (expected driver nodes {list(self.names)}: {self.source})"

    def as_dict(self) -> dict:
        """The run.json record: ``{"nodes": [...], "source": str, "known": bool}``."""
        return {"nodes": list(self.names), "source": self.source, "known": self.known}


def _driver_daemonsets(k8s: K8s, driver: DriverHandle) -> tuple[list[Obj], str]:
    namespaces = tuple(getattr(driver, "daemonset_namespaces", ()) or ())
    if namespaces:
        found = [ds for ns in namespaces for ds in k8s.list("DaemonSet", ns)]
        plugins = [ds for ds in found if runs_kubelet_plugin(ds)]
        return plugins or found, f"namespace(s) {', '.join(namespaces)}"
    found = [ds for ds in k8s.list("DaemonSet") if runs_kubelet_plugin(ds)]
    named = [ds for ds in found if driver.name in json.dumps(ds.get("spec.template") or {})]
    return named, "any namespace, naming the driver in the pod template"


def expected_nodes(k8s: K8s, driver: DriverHandle) -> ExpectedNodes:
    """The nodes ``driver`` should run on (module docstring). API errors reading DaemonSets (e.g. no
    permission to list them) fall back to the slices' nodes with the error as evidence; never raises for them."""
    if driver.processes:
        return ExpectedNodes(tuple(sorted(driver.processes)), "the nodes the harness started the plugin on")
    try:
        sets, where = _driver_daemonsets(k8s, driver)
        if sets:
            nodes = daemonset_nodes(sets, k8s.list("Node"))
            desired = {f"{ds.namespace}/{ds.name}": ds.get("status.desiredNumberScheduled") for ds in sets}
            return ExpectedNodes(
                tuple(nodes), f"nodes DaemonSet(s) {desired} (name: desiredNumberScheduled) place a pod on"
            )
        why = f"no DaemonSet of the driver found ({where})"
    except errors.ApiError as exc:
        why = f"DaemonSets unreadable ({exc})"
    published = Inventory.read(k8s, driver.name).nodes()
    return ExpectedNodes(tuple(published), f"{why}: taken from the nodes with the driver's slices", known=False)
