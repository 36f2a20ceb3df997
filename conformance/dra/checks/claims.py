"""Reading a ResourceClaim's spec and allocation, and what a DeviceClass selects, in any served version of
resource.k8s.io (v1/v1beta2 ``exactly``, v1beta1 flat requests): the helpers of the allocation checks.

Sources: resource.k8s.io/v1 DeviceRequest (``exactly`` / ``firstAvailable``), DeviceRequestAllocationResult
(``request`` is ``<request>`` or ``<request>/<subrequest>``, KEP-4816), AllocationResult.nodeSelector,
DeviceClass.spec.selectors (CEL ``device.driver``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from conformance.core.objects import Obj

DRIVER_SELECTOR = re.compile(r"""\s*device\.driver\s*==\s*["']([^"']+)["']\s*""")
NODE_FIELD = "metadata.name"


def claim_ref(claim: Obj) -> str:
    """``ResourceClaim/<namespace>/<name>`` (the ``obj`` of a violation)."""
    return f"ResourceClaim/{claim.namespace}/{claim.name}"


def results_of(claim: Obj) -> list[dict]:
    """``status.allocation.devices.results`` (empty when unallocated)."""
    return claim.get("status.allocation.devices.results") or []


def requests_of(claim: Obj) -> dict[str, dict]:
    """``{name: request}`` of the claim's top-level requests (any served version)."""
    return {r.get("name"): r for r in claim.get("spec.devices.requests") or []}


def exact_part(request: dict) -> dict:
    """The device-selecting part of a request: v1/v1beta2 ``exactly``, v1beta1 the request itself."""
    return request.get("exactly") or request


def subrequests_of(request: dict) -> dict[str, dict]:
    """``{name: subrequest}`` of a firstAvailable request (empty for an exact request)."""
    return {s.get("name"): s for s in request.get("firstAvailable") or []}


def resolve(requests: Mapping[str, dict], name: str) -> dict | None:
    """The request (or subrequest) spec a result's ``request`` names; None when it names none."""
    parent, _, sub = name.partition("/")
    request = requests.get(parent)
    if request is None:
        return None
    subs = subrequests_of(request)
    if sub:
        return subs.get(sub)
    return None if subs else exact_part(request)


def parent_of(name: str) -> str:
    """The top-level request of a result's ``request`` (``parent/sub`` -> ``parent``)."""
    return name.partition("/")[0]


def allocated_node(claim: Obj) -> str | None:
    """The node an allocation is bound to (``nodeSelector`` matchFields ``metadata.name In [node]``)."""
    terms = claim.get("status.allocation.nodeSelector.nodeSelectorTerms") or []
    for term in terms if len(terms) == 1 else []:
        for field in term.get("matchFields") or []:
            if field.get("key") == NODE_FIELD and field.get("operator") == "In" and len(field.get("values")) == 1:
                return field["values"][0]
    return None


def class_driver(device_class: Obj | None) -> str | None:
    """The driver a DeviceClass selects with a selector that is exactly ``device.driver == "X"`` (None when
    the class is unknown or selects otherwise: other CEL is not evaluated)."""
    for selector in (device_class.get("spec.selectors") or []) if device_class is not None else []:
        found = DRIVER_SELECTOR.fullmatch((selector.get("cel") or {}).get("expression") or "")
        if found:
            return found.group(1)
    return None
