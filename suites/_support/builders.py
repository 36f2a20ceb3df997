"""Builder additions the harness Builder lacks: a pod-level claim that no container references, a pod with
restartable init containers, and a pod bound to a node by ``spec.nodeName`` (scheduler bypassed).

Sources: core/v1 PodSpec.resourceClaims (KEP-4381); upstream "must call NodePrepareResources even if not
used by any container" and "must not run a pod if a claim is not ready" (test/e2e/dra/dra.go).
Belongs in: conformance/k8s/builders/builder.py (``Builder.pod`` options).
"""
from __future__ import annotations

from conformance.api import Obj

UNREFERENCED_PREFIX = "u"


def with_unreferenced_claim(pod: Obj, claim: Obj) -> Obj:
    """A copy of ``pod`` listing ``claim`` (ResourceClaim or template) in ``spec.resourceClaims`` without any
    container referencing it."""
    raw = pod.to_dict()
    claims = raw["spec"].setdefault("resourceClaims", [])
    field = "resourceClaimTemplateName" if claim.kind == "ResourceClaimTemplate" else "resourceClaimName"
    claims.append({"name": f"{UNREFERENCED_PREFIX}{len(claims)}", field: claim.name})
    return Obj(raw)


def bound_to_node(pod: Obj, node: str) -> Obj:
    """A copy of ``pod`` with ``spec.nodeName`` set (the scheduler never sees it)."""
    raw = pod.to_dict()
    raw["spec"].pop("nodeSelector", None)
    raw["spec"]["nodeName"] = node
    return Obj(raw)


def with_restart_policy(pod: Obj, policy: str) -> Obj:
    """A copy of ``pod`` with ``spec.restartPolicy`` = ``policy`` (``Always`` keeps restarting containers)."""
    raw = pod.to_dict()
    raw["spec"]["restartPolicy"] = policy
    return Obj(raw)
