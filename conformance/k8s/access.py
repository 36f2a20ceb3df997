"""``kubectl auth can-i`` for the client's own user: SelfSubjectAccessReview (authorization.k8s.io/v1), one per
verb, asked of the API server's authorizers (RBAC, webhooks...).

Source: authorization.k8s.io/v1 SelfSubjectAccessReview (``spec.resourceAttributes``: verb, group, resource,
subresource, namespace ""= all namespaces; ``spec.nonResourceAttributes``: path, verb; ``status.allowed``,
``status.reason``, ``status.evaluationError``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from conformance.core.permissions import Permission
from conformance.k8s.client import K8s

PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
PARALLEL = 8  # reviews in flight: ~70 reviews answer in well under a second on a remote API server


def review_body(permission: Permission, verb: str) -> dict:
    """The SelfSubjectAccessReview asking whether the user may ``verb`` ``permission``'s resource in every
    namespace (or cluster-wide for a cluster-scoped one), or ``permission.url``."""
    if permission.url:
        spec = {"nonResourceAttributes": {"path": permission.url, "verb": verb}}
    else:
        plural, _, sub = permission.resource.partition("/")
        attrs = {"verb": verb, "group": permission.group, "resource": plural, "namespace": ""}
        spec = {"resourceAttributes": {**attrs, **({"subresource": sub} if sub else {})}}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}


def can_i(k8s: K8s, permission: Permission, verb: str) -> bool:
    """Whether the client's user may ``verb`` on ``permission`` (``status.allowed``). Raises the ApiError of
    the server Status when the review itself is refused (not an "allowed: false")."""
    body, _ = k8s.request("POST", PATH, body=review_body(permission, verb))
    return bool((body.get("status") or {}).get("allowed"))


def denied_verbs(k8s: K8s, permissions: list[Permission]) -> list[tuple[Permission, tuple[str, ...]]]:
    """``[(permission, verbs denied)]`` for each of ``permissions`` in order (an empty tuple: all allowed);
    the reviews run :data:`PARALLEL` at a time. Raises the first ApiError of a refused review."""
    asks = [(i, verb) for i, p in enumerate(permissions) for verb in p.verbs]
    with ThreadPoolExecutor(PARALLEL) as pool:
        answers = list(pool.map(lambda a: can_i(k8s, permissions[a[0]], a[1]), asks))
    denied: dict[int, list[str]] = {i: [] for i in range(len(permissions))}
    for (i, verb), allowed in zip(asks, answers, strict=True):
        if not allowed:
            denied[i].append(verb)
    return [(p, tuple(denied[i])) for i, p in enumerate(permissions)]
