"""Node-side views for suites: CDI specs a driver wrote for a claim, the CDI device IDs a node defines, the
kubelet plugin registry, and PodResources answers reshaped per container.

Sources: CDI spec format (``cdiVersion``, ``kind``, ``devices[].name``; fully-qualified ID ``<kind>=<name>``,
dra-protocols.md §4); drivers name spec files after the claim UID (dra-example-driver, test/e2e/dra
test-driver, our reference driver); kubelet PodResources v1 ``List``/``Get`` (KEP-3695, dra-protocols.md §3).
Belongs in: conformance/node/ (a ``cdi.py`` and helpers on the PodResources client).
"""
from __future__ import annotations

import json

import yaml


def _parse(text: str) -> dict:
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text) or {}


def claim_cdi_specs(node_access, node: str, claim) -> dict[str, str]:
    """``{file name: text}`` of the node's CDI specs that belong to ``claim`` (UID in the name or text)."""
    return {name: text for name, text in node_access.cdi_specs(node).items()
            if claim.uid in name or claim.uid in text}


def defined_cdi_ids(node_access, node: str) -> set[str]:
    """Every fully-qualified CDI device ID (``<kind>=<device>``) the node's spec files define."""
    ids = set()
    for text in node_access.cdi_specs(node).values():
        spec = _parse(text)
        for dev in spec.get("devices") or []:
            ids.add(f"{spec.get('kind')}={dev.get('name')}")
    return ids


def claims_by_container(pod_resources: dict) -> dict[str, list[dict]]:
    """``{container: [DynamicResource dict]}`` from one PodResources entry (containers without DRA -> [])."""
    return {c.get("name"): list(c.get("dynamicResources") or []) for c in pod_resources.get("containers") or []}


def listed(client, pod) -> dict:
    """The PodResources entry of ``pod`` from ``List`` ({} when the kubelet does not list it)."""
    for entry in client.list():
        if entry.get("name") == pod.name and entry.get("namespace") == pod.namespace:
            return entry
    return {}


def devices_of(dynamic_resources: list[dict]) -> set[tuple[str, str, str]]:
    """``{(driver, pool, device)}`` across the ClaimResources of DynamicResource entries."""
    return {(r.get("driverName", ""), r.get("poolName", ""), r.get("deviceName", ""))
            for dr in dynamic_resources for r in dr.get("claimResources") or []}


def cdi_ids_of(dynamic_resources: list[dict]) -> set[str]:
    """Every CDI device name across the ClaimResources of DynamicResource entries."""
    return {c.get("name") for dr in dynamic_resources for r in dr.get("claimResources") or []
            for c in r.get("cdiDevices") or []}


def result_devices(claim) -> set[tuple[str, str, str]]:
    """``{(driver, pool, device)}`` of a claim's allocation results."""
    return {(r.driver, r.pool, r.device) for r in claim.results}


def allocatable(client) -> dict:
    """``GetAllocatableResources`` of one kubelet as a dict (device-plugin devices, CPU IDs, memory)."""
    return client._call("GetAllocatableResources", "AllocatableResourcesRequest")
