"""The expected driver nodes: the nodes the driver's deployment asks to run it on (issue 24 §2), so "every
node" in KEP5970-1/-2, the smoke test and ``multi_node`` is never read from the driver's own slices.

Sources, first that applies: host mode -- the nodes the harness started a plugin process on
(``driver.processes``); DaemonSet deployments (helm, manifests) -- the nodes the DaemonSet controller places a
pod of the driver's DaemonSets on (:mod:`conformance.dra.placement`), the DaemonSets of the handle's
``daemonset_namespaces`` that name the driver in their pod template (only when none does, those that mount the
kubelet's plugin registry); preinstalled -- the DaemonSets of any
namespace that mount the plugin registry and name the driver in their pod template, or the nodes the profile
names (``deploy.node_selector``: node labels, ``{}`` = every node). When none is found (a driver run some
other way, or DaemonSets the run may not list) the expected nodes fall back to the nodes with the driver's
slices and ``known`` is False: :meth:`ExpectedNodes.mismatch` then fails ("expected driver nodes unknown"),
never compares the slices with themselves (breaker finding 2). Found DaemonSets must also be ready where
their controller places them: ``status.desiredNumberScheduled`` equals the computed nodes and
``status.numberReady`` reaches it (a crash-looping plugin pod is named).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping

from conformance.core import errors, timeouts
from conformance.core.handles import DriverHandle
from conformance.core.objects import Obj
from conformance.dra.inventory import Inventory
from conformance.dra.placement import daemonset_nodes, runs_kubelet_plugin
from conformance.k8s import waits
from conformance.k8s.client import K8s

UNKNOWN_FIX = (
    "grant the run's user list daemonsets (dra-conformance preflight --print-role), or name the driver's nodes "
    "in the profile (deploy.node_selector: node labels, {} for every node)"
)


@dataclasses.dataclass(frozen=True)
class ExpectedNodes:
    """``names``: sorted node names; ``source``: how they were derived (evidence, one line); ``known``: False
    when no deployment was found and the names are the nodes with the driver's slices; ``problems``: the
    driver's DaemonSets not ready where their controller places them (one line each)."""

    names: tuple[str, ...]
    source: str
    known: bool = True
    problems: tuple[str, ...] = ()

    def mismatch(self, seen: Iterable[str] | Mapping[str, int], what: str) -> str | None:
        """None when ``seen`` (nodes where the driver shows ``what``, e.g. "devices"; a ``{node: count}``
        mapping counts the nodes with a count > 0; ``<all nodes>``-style keys are not nodes) equals
        :attr:`names`, the names are :attr:`known` and no DaemonSet has :attr:`problems`; else a message naming
        the missing and the unexpected nodes and the source (or why the expected nodes are unknown)."""
        if not self.known:
            return f"expected driver nodes unknown: {self.source}; {UNKNOWN_FIX}"
        counts = seen if isinstance(seen, Mapping) else dict.fromkeys(seen, 1)
        seen = {n for n, c in counts.items() if c and not n.startswith("<")}
        missing, extra = sorted(set(self.names) - seen), sorted(seen - set(self.names))
        parts = [f"the driver shows no {what} on node(s) {missing}"] if missing else []
        parts += [f"it shows {what} on node(s) {extra} it was not deployed to"] if extra else []
        parts += list(self.problems)
        if not parts:
            return None
        return f"{'; '.join(parts)} (expected driver nodes {list(self.names)}: {self.source})"

    def as_dict(self) -> dict:
        """The run.json record: ``{"nodes": [...], "source": str, "known": bool, "problems": [str]}``."""
        return {"nodes": list(self.names), "source": self.source, "known": self.known, "problems": list(self.problems)}


def _driver_daemonsets(k8s: K8s, driver: DriverHandle) -> tuple[list[Obj], str]:
    namespaces = tuple(getattr(driver, "daemonset_namespaces", ()) or ())
    """The driver's DaemonSets and where they were looked for. Deployed into namespaces (helm, manifests): the
    DaemonSets there that mount the kubelet's plugin registry (else all of them) and name the driver in their pod
    template (a CSI node plugin sharing the namespace, e.g. kube-system, mounts the plugin registry too: breaker
    s10 finding 5); only when none names it (a driver whose name is built into its image), all of those.
    Preinstalled: the plugin-registry DaemonSets of any namespace that name the driver."""
    namespaces = tuple(getattr(driver, "daemonset_namespaces", ()) or ())
    if namespaces:
        found = [ds for ns in namespaces for ds in k8s.list("DaemonSet", ns)]
        plugins = [ds for ds in found if runs_kubelet_plugin(ds)]
        if named := [ds for ds in plugins or found if _names(ds, driver.name)]:
            return named, f"namespace(s) {', '.join(namespaces)}, naming the driver in the pod template"
        return plugins or found, f"namespace(s) {', '.join(namespaces)}; none names the driver in its pod template"
    found = [ds for ds in k8s.list("DaemonSet") if runs_kubelet_plugin(ds)]
    return [ds for ds in found if _names(ds, driver.name)], "any namespace, naming the driver in the pod template"


def _names(ds: Obj, driver: str) -> bool:
    """Whether the pod template of DaemonSet ``ds`` names ``driver`` (args, env, labels, volumes: anywhere)."""
    return driver in json.dumps(ds.get("spec.template") or {})


def expected_nodes(k8s: K8s, driver: DriverHandle, named: Mapping[str, str] | None = None) -> ExpectedNodes:
    """The nodes ``driver`` should run on (module docstring); ``named``: the profile's ``deploy.node_selector``
    (node labels, ``{}`` = every node; None: the driver's profile's, if any). API errors reading DaemonSets
    (e.g. no permission to list them) fall back to the profile's names, else to the slices' nodes with the
    error as evidence (``known`` False); never raises for them. Raises ``ConfigError`` for a ``named`` that is
    not a mapping of label to value."""
    if driver.processes:
        return ExpectedNodes(tuple(sorted(driver.processes)), "the nodes the harness started the plugin on")
    try:
        sets, where = _driver_daemonsets(k8s, driver)
        if sets:
            nodes = k8s.list("Node")
            desired = {f"{ds.namespace}/{ds.name}": ds.get("status.desiredNumberScheduled") for ds in sets}
            return ExpectedNodes(
                tuple(daemonset_nodes(sets, nodes)),
                f"nodes DaemonSet(s) {desired} (name: desiredNumberScheduled) place a pod on ({where})",
                problems=_not_ready(k8s, sets, nodes),
            )
        why = f"no DaemonSet of the driver found ({where})"
    except errors.ApiError as exc:
        why = f"DaemonSets unreadable ({exc})"
    if named is None:
        named = (getattr(getattr(driver, "profile", None), "deploy", None) or {}).get("node_selector")
    if named is not None:
        return _named(k8s, named, why)
    published = Inventory.read(k8s, driver.name).nodes()
    return ExpectedNodes(tuple(published), f"{why}: taken from the nodes with the driver's slices", known=False)


def _named(k8s: K8s, selector: Mapping[str, str], why: str) -> ExpectedNodes:
    """The nodes whose labels match the profile's ``deploy.node_selector``."""
    if not isinstance(selector, Mapping) or not all(isinstance(v, str) for v in selector.values()):
        raise errors.ConfigError(
            f"profile deploy.node_selector {selector!r}: give node labels as a mapping of strings "
            "(e.g. {nvidia.com/gpu.present: 'true'}), or {} for every node"
        )
    nodes = [n.name for n in k8s.list("Node") if _labels_match(n, selector)]
    return ExpectedNodes(tuple(sorted(nodes)), f"the profile's deploy.node_selector {dict(selector)} ({why})")


def _labels_match(node: Obj, selector: Mapping[str, str]) -> bool:
    labels = node.get("metadata.labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _readiness(sets: list[Obj], nodes: list[Obj]) -> list[str]:
    """One line per DaemonSet whose status differs from the computed placement: desiredNumberScheduled vs the
    nodes :func:`daemonset_nodes` computes for it, numberReady vs desiredNumberScheduled."""
    out = []
    for ds in sets:
        computed = daemonset_nodes([ds], nodes)
        desired, ready = ds.get("status.desiredNumberScheduled") or 0, ds.get("status.numberReady") or 0
        if desired != len(computed) or ready != desired:
            out.append(
                f"DaemonSet {ds.namespace}/{ds.name}: status.numberReady {ready}, desiredNumberScheduled {desired}, "
                f"nodes its placement computes {len(computed)} {computed} (a plugin pod not ready, or the "
                "placement differs)"
            )
    return out


def _not_ready(k8s: K8s, sets: list[Obj], nodes: list[Obj]) -> tuple[str, ...]:
    """:func:`_readiness` once the DaemonSets settled (re-read until it is empty, at most
    ``timeouts.PLUGIN_REGISTRATION`` seconds: a plugin pod a test just restarted becomes ready again)."""
    found: list[str] = _readiness(sets, nodes)

    def settled() -> bool:
        found[:] = _readiness([k8s.get("DaemonSet", ds.name, ds.namespace) for ds in sets], nodes)
        return not found

    if found:
        waits.poll(settled, timeout=timeouts.PLUGIN_REGISTRATION, interval=2.0)
    return tuple(found)
