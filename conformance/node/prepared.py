"""Which ResourceClaims a node still has prepared, seen through NodeAccess (teardown's last claims check,
design.md §6 "claims deallocated and nothing prepared on any node").

A driver's checkpoint is private to it, so the portable evidence is what the kubelet and the container runtime
see: a CDI spec file in the node's CDI directory that names the claim UID (drivers name per-claim spec files
after the claim UID: dra-example-driver, upstream test/e2e/dra test-driver, our reference driver), and the
kubelet's PodResources ``List`` still reporting the claim for a pod (KEP-3695 ``DynamicResource.claim_name``,
``claim_namespace``; dra-protocols.md §3-4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import grpc

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.k8s.client import K8s
from conformance.k8s.tracker import Tracked
from conformance.k8s.waits import poll
from conformance.k8s.waits.pods import pod_gone
from conformance.node import cdi, podresources
from conformance.node.base import NodeAccess, NodeAccessUnavailable

UNPREPARED_POLL_S = 1.0  # seconds between two looks at a node while waiting for a claim to be unprepared


@dataclasses.dataclass(frozen=True)
class Leftovers:
    """What a node still holds of one claim after unprepare: ``found`` (evidence lines: CDI spec files naming
    its UID, PodResources pods still reporting it; empty when nothing) and ``looked`` (what was read, so an
    empty ``found`` shows that the look ran)."""

    node: str
    found: list[str]
    looked: str

    def describe(self) -> str:
        """One text for assertion messages: what was found and what was read on which node."""
        return f"node {self.node}: found {self.found or 'nothing'}; read {self.looked}"


def leftovers(node_access: NodeAccess, node: str, claim) -> Leftovers:
    """What ``node`` still holds of ``claim`` (``uid``, ``name``, ``namespace``): CDI spec files naming its
    UID (read strictly: NodeAccessUnavailable / OSError propagate, a look that cannot run is no pass) and the
    pods PodResources ``List`` still reports it for (skipped, and said so in ``looked``, when the access mode
    has no PodResources client: kind, privileged-pod).
    Source: driver contract §6.4 (NodeUnprepareResources removes what prepare wrote); KEP-3695 (List reports
    active pods' claims); design.md §6 (nothing prepared on any node)."""
    specs = node_access.cdi_specs(node)
    found = [f"CDI spec {name} names its UID {claim.uid}" for name in cdi.specs_naming(specs, claim.uid)]
    looked = f"{len(specs)} CDI spec file(s) {sorted(specs)}"
    try:
        pods = node_access.pod_resources(node).list()
    except NodeAccessUnavailable as exc:
        return Leftovers(node, found, f"{looked}; PodResources not read: {exc}")
    users = sorted(
        f"{pod.get('namespace')}/{pod.get('name')}" for pod in pods if (claim.namespace, claim.name) in _claims_of(pod)
    )
    found += [f"PodResources List still reports it for pod {user}" for user in users]
    return Leftovers(node, found, f"{looked}; PodResources List of {len(pods)} pod(s)")


def unprepared(node_access: NodeAccess, node: str, claim, *, timeout: float) -> Leftovers:
    """Wait until ``node`` holds nothing of ``claim`` (:func:`leftovers` finds nothing) and return that last
    look (its ``looked`` shows what was read). ``timeout``: seconds (scaled by ``--timeout-scale``). Raises
    WaitTimeout whose last state names what the node still holds ("claim ... still prepared on node ...");
    NodeAccessUnavailable / OSError when a look cannot run. Source: driver contract §6.4; upstream "must
    unprepare resources for force-deleted pod"."""
    seen: list[Leftovers] = []

    def clean() -> bool:
        seen.append(leftovers(node_access, node, claim))
        return not seen[-1].found

    if poll(clean, timeout=timeout, interval=UNPREPARED_POLL_S):
        return seen[-1]
    raise errors.WaitTimeout(
        f"claim {claim.namespace}/{claim.name} (UID {claim.uid}) unprepared on node {node}",
        timeouts.scaled(timeout),
        f"claim {claim.namespace}/{claim.name} still prepared on node {node}: {seen[-1].describe()}",
        party=errors.DRIVER,  # NodeUnprepareResources removes what the driver prepared
    )


def removed_and_unprepared(k8s: K8s, node_access: NodeAccess, pod: Obj, claim, *, timeout: float) -> Leftovers:
    """Wait until the deleted ``pod`` is removed (``timeout`` seconds, scaled), then look at what its node
    still holds of ``claim`` and return that look (:func:`leftovers`; the caller asserts it is empty).

    A pod whose removal never comes while its node still holds the claim is the driver's failure, not a bare
    timeout: the kubelet removes a pod only after NodeUnprepareResources succeeded for its claims, so raises
    WaitFailed "NodeUnprepareResources did not complete for claim ... on node ...: <what the node holds>". A
    pod that stays with nothing of the claim seen on the node raises pod_gone's WaitTimeout (party driver: the
    kubelet still waits on the unprepare, which a ``cdi: false`` driver leaves no trace of; s16 breaker 3 #2).
    NodeAccessUnavailable / OSError when the node cannot be read.
    Source: KEP-5970 behaviour 6; kubelet syncTerminatedPod (UnprepareDynamicResources before removal)."""
    node = pod.spec.node_name
    try:
        pod_gone(k8s, pod, timeout=timeout)
    except errors.WaitTimeout as exc:
        held = leftovers(node_access, node, claim)
        if not held.found:  # nothing seen (a cdi: false driver shows nothing): the kubelet still waits on unprepare
            raise
        raise errors.WaitFailed(
            exc.awaited,
            exc.timeout,
            exc.last_state,
            exc.events,
            f"NodeUnprepareResources did not complete for claim {claim.namespace}/{claim.name} on node {node}: "
            f"the pod is still there {exc.timeout:.0f}s after its deletion and the node still holds the claim "
            f"({held.describe()})",
        ) from exc
    return leftovers(node_access, node, claim)


def cdi_used(node_access: NodeAccess, before: dict[str, str], pod: Obj, claim) -> Leftovers:
    """What shows that the driver prepared ``claim`` of the running ``pod`` through CDI, for a profile that
    declares ``cdi: false`` (the caller asserts ``found`` is empty): spec files of the pod's node that appeared
    or changed since ``before`` (that node's :meth:`cdi_specs` read before the pod was created; compared by
    content, not by the claim UID, :func:`cdi.appeared`) and the CDI device IDs the kubelet's PodResources
    ``List`` reports for the claim (the IDs the driver's NodePrepareResources answer named; not read, and said
    so in ``looked``, when the access mode has no PodResources client). NodeAccessUnavailable / OSError when the
    specs cannot be read. Source: KEP-4381 ``Device.cdi_device_ids``; KEP-3695 ``ClaimResource.cdi_devices``;
    capability ``driver.cdi`` (conformance/core/capabilities.py); breaker finding 1."""
    node = pod.spec.node_name
    specs = node_access.cdi_specs(node)
    new = cdi.describe(cdi.appeared(before, specs))
    found = [f"CDI spec {spec} appeared on the node while the claim was prepared" for spec in new]
    looked = f"{len(specs)} CDI spec file(s), {len(before)} before the pod"
    try:
        entries = node_access.pod_resources(node).dynamic_resources(pod.name, pod.namespace)
    except NodeAccessUnavailable as exc:
        return Leftovers(node, found, f"{looked}; PodResources not read: {exc}")
    ids = podresources.reported_cdi_ids(podresources.for_claim([e for c in entries.values() for e in c], claim))
    if ids:
        found.append(f"PodResources reports CDI device IDs {sorted(ids)} for it (NodePrepareResources named them)")
    return Leftovers(node, found, f"{looked}; PodResources entry of {len(entries)} container(s)")


def _claims_of(pod: dict) -> set[tuple[str, str]]:
    """``{(claim namespace, claim name)}`` of one PodResources ``List`` entry."""
    return {
        (dr.get("claimNamespace", ""), dr.get("claimName", ""))
        for ctr in pod.get("containers") or []
        for dr in ctr.get("dynamicResources") or []
    }


class PreparedClaims:
    """A :data:`conformance.k8s.tracker.PreparedCheck` over ``node_access`` and the real kubelet ``nodes``
    (node names). Calling it with claims returns ``[(claim, node, evidence)]`` for each claim a node still
    has prepared. A node whose CDI specs cannot be read (NodeAccessUnavailable, OSError, a failed exec) raises
    NodeAccessUnavailable "could not look at node X: ...", which the tracker reports as a teardown problem: a
    look that did not run is no proof that nothing is left (breaker finding 10). PodResources is a second
    source only: a node without the socket in this mode (or a kubelet restarting) adds nothing."""

    def __init__(self, node_access: NodeAccess, nodes: Sequence[str]) -> None:
        self.node_access, self.nodes = node_access, list(nodes)

    def __call__(self, claims: Sequence[Tracked]) -> list[tuple[Tracked, str, str]]:
        found = []
        for node in self.nodes:
            specs = self._cdi_specs(node)
            in_use = self._pod_resources_claims(node)
            for claim in claims:
                spec = next(iter(cdi.specs_naming(specs, claim.uid)), None)
                if spec:
                    found.append((claim, node, f"CDI spec {spec} names its UID {claim.uid}"))
                elif (claim.namespace, claim.name) in in_use:
                    found.append((claim, node, "PodResources List still reports it for a pod"))
        return found

    def _cdi_specs(self, node: str) -> dict[str, str]:
        try:
            return self.node_access.cdi_specs(node)
        except Exception as exc:  # noqa: BLE001 - NodeAccessUnavailable, OSError, exec/stream errors of each mode
            raise NodeAccessUnavailable(
                f"could not look at node {node} ({getattr(self.node_access, 'mode', 'node access')}): {exc}"
            ) from exc

    def _pod_resources_claims(self, node: str) -> set[tuple[str, str]]:
        """``{(claim namespace, claim name)}`` of every DynamicResource the node's kubelet lists."""
        try:
            pods = self.node_access.pod_resources(node).list()
        except (NodeAccessUnavailable, OSError, grpc.RpcError):  # no socket in this mode, kubelet restarting
            return set()
        return {key for pod in pods for key in _claims_of(pod)}
