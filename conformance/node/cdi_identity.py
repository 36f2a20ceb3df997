"""Device identity in CDI edits: whether what the runtime injects for a claim is its allocated device, judged by
the profile's ``cdi_identity`` patterns (conformance/core/profile_identity.py) rendered for every device.

A device's identity is its rendered entries: env lines, device node container paths, mount container paths.
The CDI edits of a claim holding device D must carry every entry rendered for D, and none rendered for another
device of the node (an entry both render alike, e.g. a parent GPU's node shared by its partitions, counts as
D's). Env and paths only: other env lines, nodes and mounts a driver adds (``/dev/nvidiactl``) are its own
business. Sources: CDI SPEC.md ``containerEdits``; KEP-4381 (prepared devices are the allocation results);
issue 24 §3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from conformance.core.profile_identity import KEYS, render
from conformance.node import cdi, podresources
from conformance.node.base import NodeAccessUnavailable

# cdi_identity key -> the container-visible value of each CDI edit of that part (cdi.device_edits shapes)
_PARTS = {
    "env": ("env", lambda entry: entry),
    "device_nodes": ("deviceNodes", lambda entry: entry[0]),  # (path, hostPath[, type, major, minor])
    "mounts": ("mounts", lambda entry: entry[1]),  # (hostPath, containerPath, options)
}


def rendered(patterns: Mapping[str, Iterable[str]], driver: str, device) -> dict[str, set[str]]:
    """``{key: {entry}}``: ``patterns`` (a profile's ``cdi_identity``) rendered for ``device`` (an inventory
    Device: ``name``, ``pool``, ``attributes`` by qualified name). Raises LookupError naming an attribute the
    device does not publish."""
    return {
        key: {render(t, driver, device.name, device.pool, device.attributes) for t in patterns.get(key, ())}
        for key in KEYS
    }


def carried(edits: Iterable[Mapping[str, frozenset]]) -> dict[str, set[str]]:
    """``{key: {entry}}``: what the CDI edits (values of :func:`conformance.node.cdi.device_edits`) put into a
    container, as :func:`rendered` names it: env lines, device node paths, mount container paths."""
    out: dict[str, set[str]] = {key: set() for key in KEYS}
    for one in edits:
        for key, (part, value) in _PARTS.items():
            out[key] |= {value(entry) for entry in one.get(part, ())}
    return out


def problems(patterns: Mapping[str, Iterable[str]], driver: str, device, others: Iterable, found) -> list[str]:
    """What is wrong with the CDI edits ``found`` (:func:`carried`) of a claim holding ``device``, whose node also
    has the devices ``others`` (devices that lack a pattern's attribute are left out of the comparison): each
    entry of ``device``'s missing, and each entry of another device's present (naming that device).
    ``[]`` when right. Raises LookupError when ``device`` itself lacks a pattern's attribute."""
    own = rendered(patterns, driver, device)
    out = [f"{key} {sorted(own[key] - found[key])} of {device.name} missing" for key in KEYS if own[key] - found[key]]
    for other in others:
        if other.key == device.key:
            continue
        try:
            theirs = rendered(patterns, driver, other)
        except LookupError:
            continue
        for key in KEYS:
            stray = (theirs[key] - own[key]) & found[key]
            if stray:
                out.append(f"{key} {sorted(stray)} of another device, {other.name}")
    return out


class PodResourcesUnread(NodeAccessUnavailable):
    """The kubelet's PodResources could not be read on the node, so the CDI device IDs the driver answered for a
    claim are unknown; the message names the node access mode, the node and why (PREP-12 skips with it)."""


def claim_edits(node_access, pod, claim) -> tuple[dict[str, set[str]], str]:
    """``(carried, source)``: what the runtime injects for ``claim`` of the running ``pod`` (:func:`carried`),
    from the CDI device IDs the kubelet's PodResources reports for the claim (the IDs NodePrepareResources
    answered), each resolved against every spec file of the node. An ID no spec file defines adds nothing and is
    named in ``source``. Raises :class:`PodResourcesUnread` when this access mode cannot read PodResources on the
    node: the claim's own spec files alone are a weaker check (a driver may answer IDs of a driver-wide spec that
    injects another device beside a correct-looking per-claim decoy), so it is not judged (breaker s11 #8);
    otherwise what ``node_access.cdi_specs`` raises.
    Source: KEP-4381 ``Device.cdi_device_ids``; KEP-3695 ``ClaimResource.cdi_devices``; CDI SPEC.md."""
    node = pod.spec.node_name
    specs = node_access.cdi_specs(node)
    edits = cdi.device_edits(specs)
    try:
        entries = node_access.pod_resources(node).dynamic_resources(pod.name, pod.namespace)
    except NodeAccessUnavailable as exc:
        raise PodResourcesUnread(
            f"node access {getattr(node_access, 'mode', '?')!r} cannot read the kubelet's PodResources on node "
            f"{node} ({exc}): the CDI device IDs the driver answered for claim {claim.name} are unknown, and its "
            "own spec files alone do not show which device a driver-wide spec injects"
        ) from exc
    ids = podresources.reported_cdi_ids(podresources.for_claim([e for c in entries.values() for e in c], claim))
    undefined = sorted(set(ids) - set(edits))
    source = f"CDI IDs {sorted(ids)} PodResources reports for the claim on node {node}"
    return carried(edits[i] for i in ids if i in edits), source + (
        f"; defined by no spec: {undefined}" * bool(undefined)
    )
