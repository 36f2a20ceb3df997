"""``dra-conformance profile init``: draft a driver profile from what an installed driver publishes (issue 22 §3).

:func:`collect` reads, and only reads, the cluster: the DeviceClasses whose CEL selectors name the driver
(``device.driver == "NAME"``) and their ``spec.extendedResourceName`` (KEP-5004), the driver's ResourceSlices
(:class:`conformance.dra.inventory.Inventory`: attributes with their value kinds int/bool/string/version,
capacities, devices per node; ``sharedCounters``/``consumesCounters`` (KEP-4815), ``allowMultipleAllocations``
(KEP-5075), ``taints`` (KEP-5055), ``bindingConditions`` (KEP-5007)) and ResourceClaims whose
``status.devices`` the driver wrote (KEP-4817). :func:`draft` turns those facts into profile YAML with
``deploy: {mode: preinstalled}``; what only a human knows is a commented ``TODO`` line. The one TODO a draft
needs filled before ``dra-conformance profile check`` passes is ``visibility`` (REQUIRED); the others
(opaque_config, admin_access, admin_access_signal, extended_resource_name when no class maps one) are optional:
left out, their tests are skipped or waived.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from conformance.core import errors
from conformance.dra.inventory import Inventory, driver_slices
from conformance.dra.inventory import facts as device_facts
from conformance.k8s import discovery

_DRIVER_EQ = r"""device\.driver\s*==\s*["']{}["']"""


def classes_of(device_classes: list[Mapping], driver: str) -> list[dict]:
    """``[{name, extended_resource_name}]`` of the DeviceClasses (dicts as served) one of whose
    ``spec.selectors[].cel.expression`` compares ``device.driver`` with ``driver``; sorted by name."""
    pattern = re.compile(_DRIVER_EQ.format(re.escape(driver)))
    out = []
    for dc in device_classes:
        spec = dc.get("spec") or {}
        exprs = [str((s.get("cel") or {}).get("expression") or "") for s in spec.get("selectors") or []]
        if any(pattern.search(e) for e in exprs):
            name = (dc.get("metadata") or {}).get("name", "")
            out.append({"name": name, "extended_resource_name": spec.get("extendedResourceName") or ""})
    return sorted(out, key=lambda c: c["name"])


def collect(k8s, driver: str) -> dict[str, Any]:
    """The facts :func:`draft` takes, read (GET/LIST only) through the client ``k8s``
    (:class:`conformance.k8s.client.K8s`): ``classes``, ``inventory`` (:class:`Inventory`),
    ``shared_counters`` (bool: a slice publishes spec.sharedCounters), ``multiple_allocations`` (bool: a device
    sets allowMultipleAllocations) and ``status_claims`` (names of
    ResourceClaims with a ``status.devices`` entry of the driver; none when listing claims is forbidden).
    Kinds are read in resource.k8s.io v1 where served, else the newest served version. Raises the client's
    ApiError."""
    k8s.prefer_versions(discovery.served_versions(k8s))  # resource.k8s.io v1, else the newest served
    slices = driver_slices(k8s, driver)
    try:
        claims = k8s.list("ResourceClaim")
    except errors.Forbidden:  # a user who may read slices and classes but not claims: device_status unknown
        claims = []
    status_claims = sorted(
        f"{c.get('metadata.namespace')}/{c.get('metadata.name')}"
        for c in claims
        if any(d.get("driver") == driver for d in (c.get("status.devices") or []))
    )
    return {
        "classes": classes_of([dc.raw for dc in k8s.list("DeviceClass")], driver),
        "inventory": Inventory.from_slices(driver, slices),
        "shared_counters": any(s.get("spec.sharedCounters") for s in slices),
        "multiple_allocations": any(d["allow_multiple_allocations"] for d in device_facts(slices)),
        "status_claims": status_claims,
    }


def _short(driver: str, qualified: str) -> str:
    return qualified.removeprefix(f"{driver}/")


def attribute_types(inv: Inventory) -> tuple[dict[str, str], list[str]]:
    """``(types, partial)``: ``{attribute: type}`` of the attributes every device publishes (unqualified when in
    the driver's domain; a name published with two kinds is left out and reported in ``partial``), and the
    attributes only some devices publish."""
    seen: dict[str, set[str]] = {}
    for d in inv.devices:
        for name, kind in d.types.items():
            seen.setdefault(name, set()).add(kind)
    everywhere = {n for n in seen if all(n in d.types for d in inv.devices)}
    types = {_short(inv.driver, n): next(iter(k)) for n, k in sorted(seen.items()) if n in everywhere and len(k) == 1}
    partial = sorted(_short(inv.driver, n) for n in seen if n not in everywhere or len(seen[n]) > 1)
    return types, partial


def _capabilities(facts: Mapping[str, Any], per_node: dict[str, int]) -> tuple[dict[str, bool], list[str]]:
    """The capability flags the slices show (true only where shown) and comment lines saying why."""
    inv: Inventory = facts["inventory"]
    shown = {
        "partitions": facts["shared_counters"] or any(d.consumes for d in inv.devices),
        "consumable_capacity": facts["multiple_allocations"],
        "published_taints": any(d.taints for d in inv.devices),
        "binding_conditions": any(d.binding_conditions for d in inv.devices),
        "device_status": bool(facts["status_claims"]),
        "multiple_devices": min(per_node.values(), default=0) >= 2,
    }
    flags = {k: True for k, v in shown.items() if v}
    notes = [
        f"{k}: {'shown by the cluster' if v else 'not seen (left out: its tests are skipped)'}"
        for k, v in shown.items()
    ]
    return flags, notes


def draft(facts: Mapping[str, Any], driver: str, name: str, source: str = "") -> str:
    """The draft profile (YAML text with comments) of ``driver`` named ``name`` (the output file's stem) from
    :func:`collect`'s ``facts``; ``source`` says which cluster (kubeconfig and context) for the header."""
    inv: Inventory = facts["inventory"]
    per_node = {n: len(inv.on_node(n)) for n in inv.nodes()}
    types, partial = attribute_types(inv)
    ext = next((c["extended_resource_name"] for c in facts["classes"] if c["extended_resource_name"]), "")
    capacities = sorted({_short(driver, c) for d in inv.devices for c in d.capacity})
    lines = [
        f"# Draft profile of driver {driver}, written by `dra-conformance profile init` from what",
        f"# {source or 'the cluster'} publishes.",
        "# Fill the TODOs (REQUIRED: visibility), then: dra-conformance profile check FILE",
        "# yaml-language-server: $schema=profile.schema.json   (dra-conformance profile schema > profile.schema.json)",
        f"name: {name}   # the file's stem: save this draft as {name}.yaml",
        f"driver: {driver}",
        f"description: {driver} as installed on the cluster (drafted by profile init)",
        *_classes(facts["classes"], driver),
        "# value kinds as published in the ResourceSlices (int/bool/string/version)",
        f"attributes: {_dump(types, flow=True) if types else '{}'}",
    ]
    if partial:
        lines.append(f"# published by some devices only (or with two kinds), not required: {', '.join(partial)}")
    if capacities:
        lines.append(f"# capacities published: {', '.join(capacities)}")
    lines.append(f"# devices per node now (the fewest of any node): {per_node or 'no slice seen'}; a driver that")
    lines.append(
        "# unpublishes allocated devices (dranet) shows fewer while claims hold them: draft on an idle cluster"
    )
    lines.append(_dump({"devices_per_node": max(min(per_node.values(), default=1), 1)}))
    lines += _todo_visibility(types) + _todo_optional() + _capability_lines(facts, per_node, ext)
    lines.append("# the driver is already installed: the run qualifies it and installs nothing")
    lines.append("deploy: {mode: preinstalled}")
    return "\n".join(lines) + "\n"


def _classes(classes: list[dict], driver: str) -> list[str]:
    if classes:
        return [
            "# DeviceClasses whose selectors name the driver (device.driver == ...); the first is the one tests use",
            _dump({"device_classes": [c["name"] for c in classes]}),
        ]
    return [
        f'# TODO (REQUIRED): no DeviceClass selects device.driver == "{driver}"; name the class of its devices',
        f"device_classes: [{driver}]",
    ]


def _capability_lines(facts: Mapping[str, Any], per_node: dict[str, int], ext: str) -> list[str]:
    flags, notes = _capabilities(facts, per_node)
    lines = ["capabilities:", *(f"  # {n}" for n in notes), *(f"  {k}: true" for k in sorted(flags))]
    if ext:
        lines.append(f"  extended_resource_name: {ext}   # a DeviceClass's spec.extendedResourceName")
    else:
        lines.append("  # TODO (optional): extended_resource_name: example.com/gpu (KEP-5004), when a class maps one")
    lines.append("  # TODO (optional): admin_access: true when the driver serves adminAccess requests (KEP-5018)")
    lines.append(
        "  # TODO (optional): shared_claims: true (pods share one claim), prioritized_list: true (firstAvailable),"
    )
    lines.append(
        "  # health: true (it streams device health, KEP-4680); see docs/writing-a-profile.md for what each costs"
    )
    return lines


def _dump(value: Mapping, flow: bool = False) -> str:
    return yaml.safe_dump(dict(value), sort_keys=False, default_flow_style=flow, width=100).strip()


def _todo_visibility(types: Mapping[str, str]) -> list[str]:
    strings = [a for a, t in types.items() if t == "string"]
    return [
        "# TODO (REQUIRED): visibility -- how a container proves it sees its device. Try it: run a pod with a claim",
        "# of this driver, `kubectl exec POD -- env` (or the vendor's tool: nvidia-smi -L, ls /dev/dri), and write a",
        "# regex (Python, per line) its output matches only when the device is there. device_attribute: the attribute",
        f"# whose value the output shows when it shows no device name (string attributes: {', '.join(strings) or '-'})",
        "# visibility:",
        "#   command: env",
        "#   env_regex: '^MY_DEVICE_\\w+='",
    ]


def _todo_optional() -> list[str]:
    return [
        "# TODO (optional): opaque_config -- a sample opaque config the driver accepts and how it shows in the",
        "# container; give it and set capabilities.opaque_config: true, or leave both out (its tests are skipped)",
        "# opaque_config:",
        "#   parameters: {apiVersion: VENDOR/v1, kind: Config, ...}",
        "#   shows_as: '^REGEX$'",
        "#   override: {parameters: {...another value...}, shows_as: '^REGEX$'}  # required with shows_as",
        "# TODO (optional): admin_access_signal: '^REGEX$' -- what a container of an adminAccess claim shows",
    ]
