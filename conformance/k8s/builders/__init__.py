"""Builders for resource.k8s.io objects and pods: complete objects with defaults; tests state only the
difference. :class:`~conformance.k8s.builders.builder.Builder` binds them to one test (namespace, labels,
driver, DeviceClass, API version). Part functions (``request``, ``first_available``...) live in
:mod:`.parts`.
"""

from conformance.k8s.builders.builder import Builder
from conformance.k8s.builders.parts import (
    Version,
    container,
    device,
    distinct_attribute,
    first_available,
    invalid_opaque_parameters,
    match_attribute,
    opaque_config,
    request,
    subrequest,
    toleration,
)

__all__ = [
    "Builder",
    "Version",
    "container",
    "device",
    "distinct_attribute",
    "first_available",
    "invalid_opaque_parameters",
    "match_attribute",
    "opaque_config",
    "request",
    "subrequest",
    "toleration",
]
