"""Objects that break one resource.k8s.io/v1 validation limit each, with the field the API server must name.

Sources: k/k pkg/apis/resource/types.go constants and pkg/apis/resource/validation (ResourceSliceMaxDevices
128, attributes+capacities per device 32, DeviceRequestsMaxSize 32, ResourceClaimReservedForMaxSize 256,
CELSelectorExpressionMaxLength 10 KiB, CELSelectorExpressionMaxCost 1,000,000); DNS label/subdomain lengths
(63/253); dra-protocols.md §5-§6. Reasons and fields observed on kube-apiserver v1.34.4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from conformance.core.objects import Obj
from conformance.k8s.builders.parts import device, request

MAX_DEVICES_PER_SLICE = 128
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_REQUESTS_PER_CLAIM = 32
MAX_RESERVED_FOR = 256
MAX_CEL_LENGTH = 10 * 1024
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253


@dataclasses.dataclass(frozen=True)
class Limit:
    """One limit: ``id`` (catalog), ``build(builder) -> Obj`` breaking it by one, the ``field`` the Status
    cause must name, the ``reasons`` accepted for it, and a ``text`` the message must contain."""

    id: str
    build: Callable
    field: str
    reasons: tuple[str, ...]
    text: str

    def __str__(self) -> str:
        return self.id


def _expensive_cel(domain: str, depth: int = 5) -> str:
    """Nested ``all()`` over a device's attributes: estimated cost 32^depth, far above the 1e6 limit."""
    expr = "true"
    for i in range(depth):
        expr = f'device.attributes["{domain}"].all(a{i}, {expr})'
    return expr


def _long_cel() -> str:
    return " && ".join(["true"] * (MAX_CEL_LENGTH // 8 + 1))


def _many_attributes(builder) -> Obj:
    attrs = {f"a{i}": i for i in range(MAX_ATTRIBUTES_AND_CAPACITIES + 1)}
    return builder.resource_slice([device("dev-0", attributes=attrs)], all_nodes=True)


def slice_with_devices(builder, count: int) -> Obj:
    """A test-made ResourceSlice (fictional driver, all nodes) with ``count`` bare devices."""
    return builder.resource_slice([device(f"dev-{i}") for i in range(count)], all_nodes=True)


LIMITS = (
    Limit(
        "LIM-01-devices-per-slice",
        lambda b: slice_with_devices(b, MAX_DEVICES_PER_SLICE + 1),
        "spec.devices",
        ("FieldValueTooMany",),
        f"at most {MAX_DEVICES_PER_SLICE}",
    ),
    Limit(
        "LIM-09-attributes-per-device",
        _many_attributes,
        "spec.devices[0]",
        ("FieldValueInvalid", "FieldValueTooMany"),
        str(MAX_ATTRIBUTES_AND_CAPACITIES),
    ),
    Limit(
        "LIM-08-pool-name-length",
        lambda b: b.resource_slice([], all_nodes=True, pool="p" * (DNS_SUBDOMAIN_MAX + 1)),
        "spec.pool.name",
        ("FieldValueTooLong", "FieldValueInvalid"),
        str(DNS_SUBDOMAIN_MAX),
    ),
    Limit(
        "LIM-09-driver-name-length",
        lambda b: b.resource_slice([], all_nodes=True, driver="d" * DNS_LABEL_MAX + ".test"),
        "spec.driver",
        ("FieldValueTooLong", "FieldValueInvalid"),
        str(DNS_LABEL_MAX),
    ),
    Limit(
        "LIM-09-requests-per-claim",
        lambda b: b.claim(requests=[request(f"r{i}") for i in range(MAX_REQUESTS_PER_CLAIM + 1)]),
        "spec.devices.requests",
        ("FieldValueTooMany",),
        f"at most {MAX_REQUESTS_PER_CLAIM}",
    ),
    Limit(
        "LIM-09-request-name-length",
        lambda b: b.claim(requests=[request("r" * (DNS_LABEL_MAX + 1))]),
        "spec.devices.requests[0].name",
        ("FieldValueInvalid", "FieldValueTooLong"),
        str(DNS_LABEL_MAX),
    ),
    Limit(
        "LIM-09-class-name-length",
        lambda b: b.device_class(name="c" * (DNS_SUBDOMAIN_MAX + 1)),
        "metadata.name",
        ("FieldValueInvalid", "FieldValueTooLong"),
        str(DNS_SUBDOMAIN_MAX),
    ),
    Limit(
        "LIM-09-cel-cost",
        lambda b: b.claim(selectors=_expensive_cel(b.test_driver_name())),
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        ("FieldValueForbidden",),
        "exceeds cost limit",
    ),
    Limit(
        "LIM-09-cel-length",
        lambda b: b.claim(selectors=_long_cel()),
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        ("FieldValueTooLong",),
        str(MAX_CEL_LENGTH),
    ),
    Limit(
        "LIM-09-cel-compile-error",
        lambda b: b.claim(selectors="device.attributes["),
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        ("FieldValueInvalid",),
        "compilation failed",
    ),
)
