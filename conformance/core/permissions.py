"""The Kubernetes permissions a run needs: one table, read by ``dra-conformance preflight`` (one
SelfSubjectAccessReview per verb) and usable to write a minimal ClusterRole (:func:`cluster_role_rules`). Pure.

Derived from what the harness does (conformance/k8s, node, drivers, suites): a namespace per test (create,
delete, wait for its default ServiceAccount), pods and their logs, ResourceClaims and templates through every
verb the api_v1 suite exercises (get, list, watch, create, update, patch, delete, deletecollection, the
``status`` subresource), DeviceClasses, ResourceSlices and DeviceTaintRules the tests create themselves, events
read by the waits, nodes and the driver's slices read by discovery, kube-apiserver ``/metrics`` read for the
feature gates (``kubernetes_feature_enabled``, KEP-3498), kubelet metrics through ``nodes/proxy``, and
``exec`` into the privileged helper pods of ``--node-access privileged-pod``, their anchor Job (batch/v1; it
ends and deletes them when the run stops, conformance/node/helper_pod.py) and the heartbeat ``patch`` of its pod.
Sources: Kubernetes RBAC (rbac.authorization.k8s.io/v1 PolicyRule: apiGroups, resources incl.
``resource/subresource``, verbs, nonResourceURLs), resource.k8s.io/v1 (KEP-4381), DeviceTaintRule (KEP-5055).
"""

from __future__ import annotations

import dataclasses

RESOURCE = "resource.k8s.io"
READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")

# When a row applies: always, only with ``--node-access privileged-pod``, only where the cluster serves the
# resource (DeviceTaintRule: alpha/beta before v1), or optional (the run works without it, with less evidence).
ALWAYS, NODE_ACCESS, SERVED, OPTIONAL = "always", "node-access", "served", "optional"


@dataclasses.dataclass(frozen=True)
class Permission:
    """One row of :data:`NEEDED`: ``verbs`` on ``resource`` (a plural, ``resource/subresource`` allowed) of API
    group ``group`` ("" = core) in every namespace (``cluster``: a cluster-scoped resource), or on the
    non-resource ``url``; ``why``: what the run does with it; ``when``: :data:`ALWAYS`, :data:`NODE_ACCESS`,
    :data:`SERVED` or :data:`OPTIONAL` (a missing optional permission is a warning, not a failure)."""

    verbs: tuple[str, ...]
    resource: str = ""
    group: str = ""
    url: str = ""
    why: str = ""
    when: str = ALWAYS
    cluster: bool = False  # a cluster-scoped resource (else namespaced: asked for every namespace)

    @property
    def subject(self) -> str:
        """What kubectl's ``auth can-i`` names: ``namespaces``, ``resourceslices.resource.k8s.io``,
        ``pods/log``, ``/metrics``."""
        if self.url:
            return self.url
        plural, _, sub = self.resource.partition("/")
        name = f"{plural}.{self.group}" if self.group else plural
        return f"{name}/{sub}" if sub else name

    def rule(self, verbs: tuple[str, ...] | None = None) -> dict:
        """The RBAC PolicyRule granting ``verbs`` (default: all of this row's): ``{"apiGroups", "resources",
        "verbs"}`` or ``{"nonResourceURLs", "verbs"}``."""
        verbs = list(verbs or self.verbs)
        if self.url:
            return {"nonResourceURLs": [self.url], "verbs": verbs}
        return {"apiGroups": [self.group], "resources": [self.resource], "verbs": verbs}


NEEDED: tuple[Permission, ...] = (
    Permission(("create", "delete", *READ), "namespaces", why="a namespace per test, removed after it", cluster=True),
    Permission(READ, "serviceaccounts", why="waiting for a test namespace's default ServiceAccount"),
    Permission(("create", "delete", *READ), "pods", why="the pods that use claims, and their state"),
    Permission(("get",), "pods/log", why="reading what a pod's visibility probe printed"),
    Permission(("list", "watch"), "events", why="the waits (recent events; failure events end them)"),
    Permission(("get", "list"), "nodes", why="node discovery and the images nodes hold", cluster=True),
    Permission(READ + WRITE, "resourceclaims", RESOURCE, why="claims, through every verb of the API"),
    Permission(("update", "patch"), "resourceclaims/status", RESOURCE, why="status writes of the API suite"),
    Permission(READ + WRITE, "resourceclaimtemplates", RESOURCE, why="claim templates of the tests"),
    Permission(
        READ + WRITE, "deviceclasses", RESOURCE, why="the profile's classes, and classes tests create", cluster=True
    ),
    Permission(
        READ + WRITE, "resourceslices", RESOURCE, why="the driver's slices, and slices tests create", cluster=True
    ),
    Permission(
        READ + WRITE, "devicetaintrules", RESOURCE, why="device taint tests (KEP-5055)", when=SERVED, cluster=True
    ),
    Permission(("get",), url="/metrics", why="the feature gates (kube-apiserver kubernetes_feature_enabled)"),
    Permission(("get",), "nodes/proxy", why="kubelet feature gates and DRA metrics", when=OPTIONAL, cluster=True),
    Permission(  # the exec stream is a WebSocket upgrade of a GET: RBAC asks for get (and create on newer API servers)
        ("create", "get"), "pods/exec", why="reading node state through the helper pods", when=NODE_ACCESS
    ),
    Permission(  # the helper pods' owner (conformance/node/helper_pod.py run_anchor): they end after SIGKILL too
        ("create", "get", "delete"), "jobs", "batch", why="the helper pods' anchor Job", when=NODE_ACCESS
    ),
    Permission(  # conformance/node/heartbeat.py: the anchor pod ends, and the helper pods with it, when it stops
        ("patch",), "pods", why="the run's heartbeat on the helper pods' anchor pod", when=NODE_ACCESS
    ),
    Permission(  # heartbeat.py reaper: the anchor deletes the helper namespace after SIGKILL (its own account)
        ("create",), "serviceaccounts", why="the helper pods' anchor's account", when=NODE_ACCESS
    ),
    Permission(  # the anchor's one permission (delete of the helper namespace): a Role in it, gone with it
        ("create",),
        "roles",
        "rbac.authorization.k8s.io",
        why="the anchor's permission to delete the helper namespace",
        when=NODE_ACCESS,
    ),
    Permission(
        ("create",),
        "rolebindings",
        "rbac.authorization.k8s.io",
        why="granting it to the anchor's account",
        when=NODE_ACCESS,
    ),
    Permission(  # heartbeat.api_endpoints: the API server's own address, when the Service's ClusterIP fails pods
        ("list",), "endpointslices", "discovery.k8s.io", why="where the anchor reaches the API server", when=NODE_ACCESS
    ),
    Permission(  # without it the expected driver nodes are unknown and the node checks fail, unless the profile
        # names them (deploy.node_selector); no fallback to the nodes with slices (issue 24 §2, driver_nodes.py)
        ("list",),
        "daemonsets",
        "apps",
        why="the driver's DaemonSets: the nodes it should run on",
        when=OPTIONAL,
        cluster=True,
    ),
    Permission(  # conformance/k8s/scheduler_health.py: without it a dead kube-scheduler is "unknown", not named
        ("get",),
        "leases",
        "coordination.k8s.io",
        why="whether a kube-scheduler leads (the kube-system/kube-scheduler Lease): a dead one is a cluster fault",
        when=OPTIONAL,
    ),
)

# Not in NEEDED, so not in the printed role (patching Nodes is a wide grant): the full profile's health transition
# test (HLTH-02) sets the profile's health switch, a Node annotation (conformance/dra/health_switch.py); a user
# without it gets that test skipped naming this permission (conformance/fixtures.py health_switch).
HEALTH_SWITCH = Permission(
    ("patch",), "nodes", why="the profile's health switch (a Node annotation, KEP-4680)", when=OPTIONAL, cluster=True
)


def applicable(node_access: bool, served: frozenset[str] | set[str] = frozenset()) -> list[Permission]:
    """The rows of :data:`NEEDED` that apply to a run: :data:`NODE_ACCESS` rows only when ``node_access``
    (``--node-access privileged-pod``), :data:`SERVED` rows only when their plural is in ``served`` (the
    resource.k8s.io plurals the cluster serves, any version)."""
    out = []
    for p in NEEDED:
        if p.when == NODE_ACCESS and not node_access:
            continue
        if p.when == SERVED and p.resource.split("/")[0] not in served:
            continue
        out.append(p)
    return out


def cluster_role_rules(node_access: bool = True) -> list[dict]:
    """The PolicyRules of a minimal ClusterRole for a run (every row of :data:`NEEDED`, optional and served
    ones included; node-access ones when ``node_access``)."""
    return [p.rule() for p in NEEDED if node_access or p.when != NODE_ACCESS]


def cluster_role(name: str = "dra-conformance-run", node_access: bool = True) -> dict:
    """A ClusterRole object granting what a run needs (:func:`cluster_role_rules`), each rule's purpose in
    ``metadata.annotations`` under ``dra-conformance.io/why-<n>`` (n: the rule's index). Shape: the
    rbac.authorization.k8s.io/v1 ClusterRole manifest as a dict."""
    rows = [p for p in NEEDED if node_access or p.when != NODE_ACCESS]
    why = {f"dra-conformance.io/why-{i}": f"{p.subject}: {p.why} ({p.when})" for i, p in enumerate(rows)}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "annotations": why},
        "rules": [p.rule() for p in rows],
    }
