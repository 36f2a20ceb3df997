"""Where each kind lives in the API: group, default version, plural, namespaced.

Source: resource.k8s.io/v1 API (KEP-4381) and core/v1. DRA kinds exist in ``v1`` and (runtime-config)
``v1beta1``/``v1beta2``; DeviceTaintRule is ``v1alpha3`` (1.33-1.35), ``v1beta2`` (1.36), ``v1`` (1.37+).
"""

from __future__ import annotations

import dataclasses

RESOURCE_GROUP = "resource.k8s.io"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")


@dataclasses.dataclass(frozen=True)
class Resource:
    """One API resource: ``group`` ("" for core), ``version``, ``plural``, ``namespaced``, ``kind``."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The REST path; ``namespace`` is ignored for cluster-scoped kinds; None lists all namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if subresource:
            base += f"/{subresource}"
        return base

    def at(self, version: str) -> Resource:
        """The same resource at another version of its group."""
        return dataclasses.replace(self, version=version)


TABLE = {
    "Pod": ("", "v1", "pods", True),
    "Namespace": ("", "v1", "namespaces", False),
    "Node": ("", "v1", "nodes", False),
    "Event": ("", "v1", "events", True),
    "ConfigMap": ("", "v1", "configmaps", True),
    "ServiceAccount": ("", "v1", "serviceaccounts", True),
    "DaemonSet": ("apps", "v1", "daemonsets", True),
    "Job": ("batch", "v1", "jobs", True),
    "DeviceClass": (RESOURCE_GROUP, "v1", "deviceclasses", False),
    "ResourceClaim": (RESOURCE_GROUP, "v1", "resourceclaims", True),
    "ResourceClaimTemplate": (RESOURCE_GROUP, "v1", "resourceclaimtemplates", True),
    "ResourceSlice": (RESOURCE_GROUP, "v1", "resourceslices", False),
    "DeviceTaintRule": (RESOURCE_GROUP, "v1", "devicetaintrules", False),
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False),
    "EndpointSlice": ("discovery.k8s.io", "v1", "endpointslices", True),
    "Role": ("rbac.authorization.k8s.io", "v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io", "v1", "rolebindings", True),
}


def resource(kind: str, api_version: str | None = None) -> Resource:
    """The :class:`Resource` of ``kind``, at ``api_version`` (``group/version`` or a bare version) if given.

    Raises KeyError naming the known kinds for an unknown kind.
    """
    if kind not in TABLE:
        raise KeyError(f"unknown kind {kind!r}; known: {sorted(TABLE)}")
    group, version, plural, namespaced = TABLE[kind]
    if api_version:
        version = api_version.rsplit("/", 1)[-1]
    return Resource(kind, group, version, plural, namespaced)


def for_object(obj: dict) -> Resource:
    """The :class:`Resource` of an object dict from its ``kind`` and ``apiVersion``."""
    return resource(obj["kind"], obj.get("apiVersion"))
