"""Cluster facts for capability discovery: served resource.k8s.io versions and resources, server and kubelet
versions, nodes, feature gates from ``kubernetes_feature_enabled`` metrics, and the driver's slices.

Sources: API discovery (/apis/resource.k8s.io), component-base metric ``kubernetes_feature_enabled{name,stage}``
(KEP-3498), kubelet metrics through the node proxy ``/api/v1/nodes/<node>/proxy/metrics``.
"""

from __future__ import annotations

import re

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.dra import inventory
from conformance.dra.inventory import driver_slices  # noqa: F401 - part of discovery's facts
from conformance.k8s.client import K8s
from conformance.k8s.prometheus import samples
from conformance.k8s.resources import RESOURCE_GROUP


def served_versions(k8s: K8s) -> dict[str, list[str]]:
    """``{version: [resource plural...]}`` served for resource.k8s.io (empty when the group is absent)."""
    try:
        group = k8s.get_json(f"/apis/{RESOURCE_GROUP}")
    except errors.NotFound:
        return {}
    except errors.ApiError as exc:  # 401/403: nothing can be discovered, so nothing can be run or checked
        if (why := refused(exc, k8s)) is not None:
            raise why from exc
        raise
    out = {}
    for v in group.get("versions") or []:
        version = v.get("version")
        try:
            doc = k8s.get_json(f"/apis/{RESOURCE_GROUP}/{version}")
        except errors.ApiError:
            continue
        out[version] = sorted(r["name"] for r in doc.get("resources") or [] if "/" not in r["name"])
    return out


def server_version(k8s: K8s) -> str:
    """``gitVersion`` of the API server (``v1.34.4``). Raises ClusterUnavailable when unreachable."""
    try:
        return k8s.get_json("/version").get("gitVersion", "")
    except errors.ApiError as exc:
        raise refused(exc, k8s) or errors.ClusterUnavailable(
            f"API server {k8s.host} answered /version with {exc}"
        ) from exc
    except Exception as exc:  # connection refused, TLS, DNS
        raise errors.ClusterUnavailable(
            f"API server {k8s.host} is unreachable: {exc}; check --kubeconfig and --context (run: or --cluster local)"
        ) from exc


def parse_feature_metrics(text: str) -> dict[str, bool]:
    """``{gate: enabled}`` from Prometheus text containing ``kubernetes_feature_enabled{name="X"} 1``."""
    gates = {}
    for labels, value in samples(text, "kubernetes_feature_enabled"):
        if labels.get("name"):
            gates[labels["name"]] = value == 1.0
    return gates


def parse_feature_stages(text: str) -> dict[str, str]:
    """``{gate: stage}`` from the ``stage`` label of ``kubernetes_feature_enabled`` (component-base
    featuregate metrics: ``ALPHA``, ``BETA``, ``DEPRECATED``; an empty stage is GA, reported as ``GA``)."""
    return {
        labels["name"]: labels.get("stage") or "GA"
        for labels, _ in samples(text, "kubernetes_feature_enabled")
        if labels.get("name")
    }


def apiserver_feature_stages(k8s: K8s) -> dict[str, str]:
    """The API server's ``{gate: stage}`` (:func:`parse_feature_stages`); ``{}`` when /metrics is not readable."""
    try:
        return parse_feature_stages(k8s.get_raw("/metrics"))
    except errors.ApiError:
        return {}


def apiserver_feature_gates(k8s: K8s) -> tuple[dict[str, bool], str]:
    """``({gate: enabled}, error)``: the API server's feature gates from its /metrics, and ``""``; or ``{}`` and
    the API error text when /metrics is not readable (e.g. 403: the user lacks ``get`` on nonResourceURL
    /metrics), so capability evaluation can tell an unknown gate from one that is off."""
    try:
        return parse_feature_metrics(k8s.get_raw("/metrics")), ""
    except errors.ApiError as exc:
        return {}, str(exc) or type(exc).__name__


def kubelet_feature_gates(k8s: K8s, node: str) -> dict[str, bool]:
    """Feature gates of one kubelet via the node proxy ({} when not readable: one attempt, no retries, so
    unreachable nodes, e.g. kwok's or NotReady ones, cost one round trip each, not ~9 s)."""
    try:
        return parse_feature_metrics(k8s.get_raw(f"/api/v1/nodes/{node}/proxy/metrics", retry=False))
    except (errors.ApiError, OSError):
        return {}


def nodes(k8s: K8s) -> list[Obj]:
    """All Node objects. Raises ClusterUnavailable (:func:`refused`) when the server refuses the credentials
    (401); other ApiErrors (a 403: the caller names the permission) as they come."""
    try:
        return k8s.list("Node")
    except errors.ApiError as exc:
        if exc.status == 401 and (why := refused(exc, k8s)) is not None:
            raise why from exc
        raise


def refused(exc: errors.ApiError, k8s: K8s) -> errors.ClusterUnavailable | None:
    """The error for a request the API server refused as a whole: 401 (it does not accept the credentials of
    the kubeconfig's user: an expired token or certificate, an exec/auth plugin that failed or is missing) or
    403 (the user may not even read this). Names the request, the server, the kubeconfig (``k8s.kube``) and
    the fix. None for any other status. Source: Kubernetes "Authenticating" (401 for failed authentication)
    and "Authorization" (403 for a denied request)."""
    if exc.status not in (401, 403):
        return None
    kube = getattr(k8s, "kube", None)
    whose = f"kubeconfig {kube.describe()}" if kube is not None else "the kubeconfig"
    if exc.status == 401:
        return errors.ClusterUnavailable(
            f"the API server {k8s.host} refused the credentials of the user of {whose} ({exc}); fix: check that "
            "context's user in the kubeconfig (an expired token or client certificate: log in again or renew it; "
            "an exec plugin: run its command yourself to see why it fails), or pass --kubeconfig/--context of a "
            "user the cluster accepts"
        )
    return errors.ClusterUnavailable(
        f"the user of {whose} lacks a permission on the API server {k8s.host} for a request the run needs "
        f"({exc}); fix: grant it with RBAC "
        "(`dra-conformance preflight --print-role` prints the ClusterRole a run needs: bind it to that user), "
        "or pass --kubeconfig/--context of a user that has it"
    )


def node_facts(node: Obj) -> dict:
    """``{name, kubelet_version, container_runtime, os_image, ready}`` of one Node."""
    info = node.get("status.nodeInfo") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in node.get("status.conditions") or [])
    return {
        "name": node.name,
        "kubelet_version": info.get("kubeletVersion", ""),
        "container_runtime": info.get("containerRuntimeVersion", ""),
        "os_image": info.get("osImage", ""),
        "ready": ready,
    }


def devices_of(slices: list[Obj]) -> list[dict]:
    """``[{node, pool, device, attributes, capacity, ...}]`` flattened from slices (see
    :func:`conformance.dra.inventory.facts`; v1beta1 ``basic`` unwrapped)."""
    return inventory.facts(slices)


# Release (minor) from which reading each beta version of resource.k8s.io answers with a deprecation Warning:
# feature-catalog.md §1.2 (v1beta1 deprecated in v1.35, removal planned v1.38; v1beta2 deprecated in v1.36,
# removal v1.39 — k/k staging/src/k8s.io/api/resource/*/zz_generated.prerelease-lifecycle.go); KEP-1693.
# Observed: v1.34.4 sends none for either.
DEPRECATED_IN_MINOR = {"v1beta1": 35, "v1beta2": 36}


def server_minor(k8s: K8s) -> int:
    """The API server's minor version (``/version`` ``minor``, "34+" -> 34; 0 when absent)."""
    return int(re.sub(r"\D.*$", "", str(k8s.get_json("/version").get("minor", "0"))) or 0)


def expects_deprecation_warning(k8s: K8s, version: str) -> bool:
    """Whether reading resource.k8s.io/``version`` (``v1beta1`` | ``v1beta2``) must warn on this server."""
    return server_minor(k8s) >= DEPRECATED_IN_MINOR[version]
