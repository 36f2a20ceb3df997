"""The one public module suites import (design.md §2): builders' parts, edits and catalogs, waits, timeouts,
errors, API verbs, inventory, kubelet metrics, node-state helpers and invariant checks (``check_slices``).

    from conformance.api import waits, timeouts, request, first_available, match_attribute, opaque_config

Fixtures (``k8s``, ``namespace``, ``builder``, ``tracker``, ``driver``, ``profile``, ``capabilities``,
``node_access``, ``run_config``, ``cluster``; ``probe``, ``inventory``, ``admin_builder``, attribute pickers)
come from the ``dra_conformance`` pytest plugin by name. An import-linter contract keeps suites on this
module. See conformance/k8s/README.md for the cheat sheet.
"""

from conformance.core import errors, markers, timeouts
from conformance.core.errors import ApiError, Conflict, Invalid, LeakError, NotFound, WaitFailed, WaitTimeout
from conformance.core.objects import Obj
from conformance.dra.cel import cel_attribute, cel_capacity, cel_literal
from conformance.dra.checks.base import Violation
from conformance.dra.checks.base import describe as describe_violations
from conformance.dra.checks.slices import check_slices, node_owner_uids
from conformance.dra.claimstatus import (
    IMPLICIT_PREFIX,
    binding_problems,
    device_status_problems,
    entry_key,
    extended_claim,
    extended_claim_problems,
)
from conformance.dra.device_taints import eviction_delay
from conformance.dra.hand_allocation import allocate, free_device, result
from conformance.dra.inventory import (
    current_slices,
    device_fields,
    driver_slices,
    pool_devices,
    remove_driver_slice,
    slice_state,
)
from conformance.k8s import api_verbs, waits
from conformance.k8s.builders import (
    Version,
    container,
    device,
    distinct_attribute,
    first_available,
    invalid_opaque_parameters,
    limits,
    match_attribute,
    opaque_config,
    request,
    subrequest,
    toleration,
)
from conformance.k8s.builders.catalog import CORE_KINDS, EMPTY_ALLOCATION, KINDS, reserved_for
from conformance.k8s.builders.edits import (
    PATCH_TYPES,
    label_patch,
    status_patch,
    with_added_device,
    with_field,
    with_label,
    with_selectors,
)
from conformance.k8s.builders.parts import NEVER_MATCHES
from conformance.k8s.discovery import expects_deprecation_warning, server_minor
from conformance.node import cdi, cdi_identity, kubelet
from conformance.node.draplugin import replaced_uid
from conformance.node.podresources import (
    PodResourcesError,
    allocatable_device_ids,
    allocated_devices,
    claims_by_container,
    for_claim,
    reported_cdi_ids,
    reported_devices,
)
from conformance.node.prepared import Leftovers, cdi_used, leftovers, removed_and_unprepared, unprepared
from conformance.node.registration import kubelet_uses

__all__ = [
    "allocate",
    "free_device",
    "result",
    "invalid_opaque_parameters",
    "unprepared",
    "IMPLICIT_PREFIX",
    "binding_problems",
    "device_status_problems",
    "entry_key",
    "extended_claim",
    "extended_claim_problems",
    "eviction_delay",
    "slice_state",
    "remove_driver_slice",
    "pool_devices",
    "current_slices",
    "describe_violations",
    "node_owner_uids",
    "check_slices",
    "Violation",
    "CORE_KINDS",
    "EMPTY_ALLOCATION",
    "KINDS",
    "NEVER_MATCHES",
    "PATCH_TYPES",
    "ApiError",
    "Conflict",
    "Invalid",
    "LeakError",
    "Leftovers",
    "NotFound",
    "Obj",
    "PodResourcesError",
    "Version",
    "WaitFailed",
    "WaitTimeout",
    "allocatable_device_ids",
    "allocated_devices",
    "api_verbs",
    "cdi",
    "cdi_identity",
    "cel_attribute",
    "cel_capacity",
    "cel_literal",
    "claims_by_container",
    "container",
    "device",
    "device_fields",
    "driver_slices",
    "distinct_attribute",
    "errors",
    "expects_deprecation_warning",
    "first_available",
    "for_claim",
    "kubelet",
    "kubelet_uses",
    "label_patch",
    "leftovers",
    "removed_and_unprepared",
    "cdi_used",
    "limits",
    "markers",
    "match_attribute",
    "opaque_config",
    "reported_cdi_ids",
    "replaced_uid",
    "reported_devices",
    "request",
    "reserved_for",
    "server_minor",
    "status_patch",
    "subrequest",
    "timeouts",
    "toleration",
    "waits",
    "with_added_device",
    "with_field",
    "with_label",
    "with_selectors",
]
