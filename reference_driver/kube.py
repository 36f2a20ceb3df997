"""Kubernetes API access for the plugin: client construction (kubeconfig or in-cluster) and the
:class:`~reference_driver.prepared.ClaimSource` that reads ResourceClaims as decoded JSON.

Claims are read with ``_preload_content=False`` and decoded as plain JSON, so fields newer than the
Python client's models (e.g. ``shareID``, ``consumedCapacity``) are never dropped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.rest import ApiException

log = logging.getLogger(__name__)
REQUEST_TIMEOUT = 10.0
"""Seconds per API call; well under the kubelet's 45 s NodePrepareResources deadline."""


def api_client(kubeconfig: Path | None) -> client.ApiClient:
    """An ApiClient from ``kubeconfig`` or, when None, the in-cluster service account.

    Raises kubernetes.config.ConfigException naming what is missing.
    """
    if kubeconfig is not None:
        return config.new_client_from_config(config_file=str(kubeconfig))
    cfg = client.Configuration()
    config.load_incluster_config(client_configuration=cfg)
    return client.ApiClient(cfg)


class ApiClaimSource:
    """ClaimSource reading ``resource.k8s.io/v1`` ResourceClaims."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = client.ResourceV1Api(api)

    def get_claim(self, namespace: str, name: str) -> dict:
        """The claim as JSON. Raises LookupError on 404, ApiException on other API errors."""
        try:
            resp = self._api.read_namespaced_resource_claim(
                name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as err:
            if err.status == 404:
                raise LookupError(f"ResourceClaim {namespace}/{name} not found") from None
            raise
        return json.loads(resp.data)


def node_uid(api: client.ApiClient, node: str) -> str:
    """UID of Node ``node``. Raises ApiException (404 when the node does not exist)."""
    return client.CoreV1Api(api).read_node(node, _request_timeout=REQUEST_TIMEOUT).metadata.uid


def unhealthy_switch(api: client.ApiClient, node: str, driver: str) -> Callable[[], frozenset[str]]:
    """The runtime health switch: a callable returning the device names listed (comma-separated) in the Node
    annotation ``<driver>/unhealthy`` of ``node`` (empty when absent or unreadable: an API error logs and
    reads as no switch). Read by the health stream (KEP-4680) once per response."""
    key = f"{driver}/unhealthy"

    def read() -> frozenset[str]:
        try:
            meta = client.CoreV1Api(api).read_node(node, _request_timeout=REQUEST_TIMEOUT).metadata
        except ApiException as err:
            log.warning("health switch: reading node %s failed: %s", node, err.reason)
            return frozenset()
        value = (meta.annotations or {}).get(key) or ""
        return frozenset(n.strip() for n in value.split(",") if n.strip())

    return read


class ClaimStatusWriter:
    """Writes ``status.devices`` of ResourceClaims (``resource.k8s.io/v1`` status subresource; RBAC
    ``resourceclaims/status`` update, or ``resourceclaims/driver`` with the granular authorization of 1.36+).

    Read-modify-write with the object's resourceVersion, retried on 409 Conflict (the scheduler and the
    kubelet write the same status)."""

    ATTEMPTS = 5

    def __init__(self, api: client.ApiClient) -> None:
        self._api = client.ResourceV1Api(api)

    def _read(self, namespace: str, name: str) -> dict:
        resp = self._api.read_namespaced_resource_claim(
            name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        return json.loads(resp.data)

    def list_all(self) -> list[dict]:
        """Every ResourceClaim of the cluster, as JSON."""
        resp = self._api.list_resource_claim_for_all_namespaces(
            _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        return json.loads(resp.data).get("items") or []

    def update_devices(self, namespace: str, name: str, uid: str, edit) -> bool:
        """Set ``status.devices`` to ``edit(current entries)`` (a list, or None for "nothing to write") on the
        claim ``namespace/name`` if its UID is still ``uid``; True when written. Raises LookupError (claim gone or
        replaced), ApiException (other API errors, or still conflicting after :attr:`ATTEMPTS` tries)."""
        for attempt in range(self.ATTEMPTS):
            try:
                claim = self._read(namespace, name)
            except ApiException as err:
                if err.status == 404:
                    raise LookupError(f"ResourceClaim {namespace}/{name} not found") from None
                raise
            if claim["metadata"].get("uid") != uid:
                raise LookupError(f"ResourceClaim {namespace}/{name} was replaced (UID is not {uid})")
            devices = edit(list((claim.get("status") or {}).get("devices") or []))
            if devices is None:
                return False
            claim.setdefault("status", {})["devices"] = devices
            try:
                self._api.replace_namespaced_resource_claim_status(
                    name, namespace, claim, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
                return True
            except ApiException as err:
                if err.status != 409 or attempt == self.ATTEMPTS - 1:
                    raise
        return False
