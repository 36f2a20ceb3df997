"""The resource.k8s.io kinds the v1 API tests exercise, each with a builder call for a minimal valid object
that touches no real device, plus valid claim statuses a test may write.

Sources: upstream test/e2e/dra/dra.go "CRUD Tests" (conformance, v1.35/v1.37): DeviceClass with a selector
matching nothing, ResourceSlice for a fictional driver, DeviceTaintRule for a driver no device has, a claim
status ``allocation: {}``; k/k pkg/apis/resource/validation (reservedFor entries: resource, name, uid).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from conformance.core.objects import Obj
from conformance.k8s.builders.parts import NEVER_MATCHES
from conformance.k8s.resources import resource

TAINT_KEY = "dra-conformance.test/api-crud"
EMPTY_ALLOCATION = {"allocation": {}}  # a valid claim status: the upstream CRUD conformance test writes it


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind: ``name``, ``build(builder) -> Obj`` (a minimal valid object), the ``capability`` it needs
    ("" for none); ``plural`` and ``namespaced`` come from the resource table."""

    name: str
    build: Callable[..., Obj]
    capability: str = ""

    @property
    def plural(self) -> str:
        """The resource name in URLs and discovery (``resourceclaims``)."""
        return resource(self.name).plural

    @property
    def namespaced(self) -> bool:
        """Whether objects of the kind live in a namespace."""
        return resource(self.name).namespaced

    def __str__(self) -> str:
        return self.name


KINDS = (
    Kind("DeviceClass", lambda b: b.device_class(selectors=NEVER_MATCHES)),
    Kind("ResourceClaim", lambda b: b.claim()),
    Kind("ResourceClaimTemplate", lambda b: b.claim_template()),
    Kind("ResourceSlice", lambda b: b.resource_slice([], all_nodes=True)),
    Kind(
        "DeviceTaintRule",
        lambda b: b.device_taint_rule(key=TAINT_KEY, driver=b.test_driver_name()),
        "api.devicetaintrules",
    ),
)
CORE_KINDS = KINDS[:4]


def reserved_for(count: int) -> dict:
    """A ResourceClaim status with an empty allocation and ``count`` fictional pod consumers."""
    return {
        **EMPTY_ALLOCATION,
        "reservedFor": [
            {"resource": "pods", "name": f"pod-{i}", "uid": f"00000000-0000-4000-8000-{i:012d}"} for i in range(count)
        ],
    }
