"""Kubernetes releases that switch a DRA feature on but do not deliver it: allocator and platform (control-plane)
behaviours measured per minor release, and the gates they need. Used by :mod:`conformance.core.capabilities`
(``allocator.*`` and ``platform.*`` capabilities) and the matrix report (the gate each capability depends on)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from conformance.core.capabilities import Capability


class Until(NamedTuple):
    """A gap of the patches of one minor before ``fixed_in`` (``v1.35.6``: v1.35.0 to v1.35.5 have it), where a
    gap entry's plain ``str`` evidence covers every patch of its minor. A version whose patch cannot be read
    (``1.35``) has the gap (nothing is assumed fixed)."""

    evidence: str
    fixed_in: str


# v1.35.4, 1.35.4-gke.100, v1.35.6-rc.0 (a pre-release comes before its patch), v1.35.4+k3s1
_PATCH = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(-(?:alpha|beta|rc)\b)?")


def _patch(version: str) -> tuple[int, int, int, int] | None:
    """``(major, minor, patch, 0 for a pre-release / 1 for the release)`` of ``version``; None when unreadable."""
    m = _PATCH.match(version.strip())
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]), 0 if m[4] else 1)


def gap_of(gaps: Mapping[str, str | Until], version: str) -> str:
    """The evidence of the gap that Kubernetes ``version`` (``v1.35.4``, ``1.35``) has in ``gaps`` ({minor: str
    for every patch, or :class:`Until` for the patches before a fix}), ``""`` when it has none."""
    gap = gaps.get(".".join(version.strip().lstrip("v").split(".")[:2]))
    if not isinstance(gap, Until):
        return gap or ""
    have, fixed = _patch(version), _patch(gap.fixed_in)
    if have is None or fixed is None:
        return f"{gap.evidence} (the cluster's patch release is not known; fixed in {gap.fixed_in})"
    return "" if have >= fixed else f"{gap.evidence} (fixed in {gap.fixed_in})"


# How allocator.admin_access_counters was established per minor (breaker F3: no bare "not measured here").
# measured: `dra-conformance run --cluster local --k8s-version <minor> --driver fixtures/self-validation/
# reference-partitions-taints-health.yaml --profile full --feature-gates all --workers 0 --timeout-scale 0.5 --
# suites/admin_access/test_admin_access.py::test_admin_claim_gets_devices_already_in_use` with the entry removed.
# read: k8s.io/dynamic-resource-allocation structured/internal/{stable,incubating,experimental}/allocator_*.go,
# where checkAvailableCounters runs for an admin-access request as for any other (no admin bypass).
_MEASURED = "the admin pod stays Pending 'cannot allocate all claims'"
ADMIN_COUNTERS_EVIDENCE = {
    "1.34": "measured on v1.34.4 with the full profile on fixtures/self-validation/"
    f"reference-partitions-taints-health.yaml, {_MEASURED}",
    "1.35": "measured on v1.35.6 (2026-12-06) with the full profile on fixtures/self-validation/"
    "reference-partitions-taints-health.yaml: the ordinary pod ran (no scheduler panic: v0.35.6 carries "
    f"kubernetes/kubernetes#138885 via #138989), {_MEASURED}; v1.35.0-v1.35.5 panic first "
    "(allocator.all_mode_counters, #138882)",
    "1.36": "measured on v1.36.3 (2026-12-06) with the full profile on fixtures/self-validation/"
    "reference-partitions-taints-health.yaml: the ordinary pod ran (no scheduler panic: v0.36.3 carries "
    f"kubernetes/kubernetes#138885), {_MEASURED}",
    "1.37": "measured on v1.37.2 (2026-12-06) with the full profile on fixtures/self-validation/"
    "reference-partitions-taints-health.yaml: the ordinary pod ran (no scheduler panic: v0.37.2 carries "
    f"kubernetes/kubernetes#138885), {_MEASURED}",
}

# Allocator behaviours a feature gate turns on but a Kubernetes release does not deliver: capability ->
# {minor: evidence}. Measured with suites/allocation/test_constraints.py on the local cluster (v1.34.4 fails);
# upstream kubernetes/kubernetes#140438. On v1.35.4 (first built here 2026-12-06) both distinctAttribute tests of
# test_constraints.py and test_allocation_result_carries_the_request_tolerations pass; v1.36.3 / v1.37.2 have no
# entry for them on the v0.36.3 / v0.37.2 allocator source (NOTES-releases, session 13); admin_access_counters was
# measured on v1.36.3 and v1.37.2 (session 14).
KNOWN_ALLOCATOR_GAPS = {
    "allocator.distinct_attribute": {
        "1.34": "the 1.34 kube-scheduler allocator accepts devices that share the distinctAttribute value "
        "(measured on v1.34.4; v1.35.4 measured fixed; kubernetes/kubernetes#140438)"
    },
    "allocator.result_tolerations": {
        "1.34": "the 1.34 kube-scheduler allocator never copies a request's tolerations into "
        "status.allocation.devices.results[].tolerations (measured with suites/taints on v1.34.4: the result "
        "has none; k8s.io/dynamic-resource-allocation v0.34.4 never sets the field; v0.35.4, v0.36.3 and v0.37.2 set "
        "it in their experimental and incubating allocators, v0.36.3 and v0.37.2 also in stable)"
    },
    "allocator.admin_access_counters": {
        minor: "the kube-scheduler allocator checks and reserves the counters of a device allocated with admin "
        "access, so an admin claim never gets a partition (or partitioned device) whose counters an ordinary claim "
        f"consumed: {evidence} (kubernetes/kubernetes#140729, open)"
        for minor, evidence in ADMIN_COUNTERS_EVIDENCE.items()
    },
    # read in k8s.io/dynamic-resource-allocation (the kube-scheduler's allocator): v0.35.0-v0.35.5 and
    # v0.36.0-v0.36.1 build allocationMode All candidates without their pool (experimental and incubating
    # allocators; v0.36.x stable too), v0.35.6 and v0.36.2 set it, v0.37.0 has it; v0.34.4 reads counters from the
    # slice (no pool). Measured on v1.35.4 (session 14): the scheduler panicked and exited.
    "allocator.all_mode_counters": {
        minor: Until(
            f"the {minor} kube-scheduler panics (nil pool in checkAvailableCounters) and exits when a claim with "
            "allocationMode All matches devices that consume shared counters (kubernetes/kubernetes#138882, "
            f"fixed by #138885, in {fixed} via #{pr}; measured on v1.35.4)",
            fixed,
        )
        for minor, fixed, pr in (("1.35", "v1.35.6", 138989), ("1.36", "v1.36.2", 138988))
    },
}
# the gate each allocator capability needs, and the words of its evidence when that gate is off
ALLOCATOR_GATES = {
    "allocator.distinct_attribute": ("gate.DRAConsumableCapacity", "distinctAttribute needs DRAConsumableCapacity"),
    "allocator.result_tolerations": ("gate.DRADeviceTaints", "tolerations in allocation results need DRADeviceTaints"),
    "allocator.admin_access_counters": (
        "gate.DRAPartitionableDevices",
        "admin access to devices consuming counters needs DRAPartitionableDevices",
    ),
    "allocator.all_mode_counters": (
        "gate.DRAPartitionableDevices",
        "allocationMode All over devices consuming counters needs DRAPartitionableDevices",
    ),
}


def allocator(name: str, facts: Mapping[str, Any], gates: Mapping[str, Capability]) -> tuple[bool, str]:
    """``(available, evidence)`` of allocator capability ``name``: its gate (:data:`ALLOCATOR_GATES`) must be on
    and the Kubernetes version in ``facts["k8s_version"]`` must have no :data:`KNOWN_ALLOCATOR_GAPS` entry
    (:func:`gap_of`: a minor's entry, or its patches before an :class:`Until` fix)."""
    gate_name, needs = ALLOCATOR_GATES[name]  # distinctAttribute is part of KEP-5075, tolerations of KEP-5055
    gate = gates[gate_name]
    if not gate.available:
        return (False, f"{needs}: {gate.evidence}")
    version = str(facts.get("k8s_version") or "")
    gap = gap_of(KNOWN_ALLOCATOR_GAPS.get(name, {}), version)
    if gap:
        return (False, f"Kubernetes {version}: {gap}")
    return (True, f"Kubernetes {version} with {gate_name.split('.', 1)[1]} on; no known allocator gap")


# Control-plane behaviours a gate turns on but a Kubernetes release does not deliver: capability -> (the gate it
# needs, {minor: evidence}). Measured with suites/extended_resources and suites/node/test_device_health.py on
# the local cluster.
KNOWN_PLATFORM_GAPS = {
    "platform.extended_claim_cleanup_on_completion": (
        "gate.DRAExtendedResource",
        {
            "1.34": "the 1.34 kube-controller-manager keeps the claim generated for a pod's extended resources "
            "allocated and reserved for the pod after the pod Succeeded (measured on v1.34.4: still reserved "
            "120 s later; it goes only with the pod, through its ownerReference)"
        },
    ),
    "platform.health_of_named_claims": (
        "gate.ResourceHealthStatus",
        {
            "1.35": "the 1.35 kubelet's UpdateAllocatedResourcesStatus looks a container's claim up only in "
            "pod.status.resourceClaimStatuses, which lists template-generated claims, so a pod using a claim by "
            "name never gets allocatedResourcesStatus (measured twice on v1.35.4, the same driver reports health "
            "on v1.34.4 and v1.37.2; k8s.io/kubernetes v1.35.4 pkg/kubelet/cm/dra/manager.go; v1.36.3 adds the "
            "fallback to pod.spec.resourceClaims)"
        },
    ),
}


def platform(name: str, facts: Mapping[str, Any], gates: Mapping[str, Capability]) -> tuple[bool, str]:
    """``(available, evidence)`` of platform capability ``name``: its gate must be on and the Kubernetes minor
    must have no gap in :data:`KNOWN_PLATFORM_GAPS`."""
    gate_name, gaps = KNOWN_PLATFORM_GAPS[name]
    gate = gates[gate_name]
    if not gate.available:
        return (False, gate.evidence)
    version = str(facts.get("k8s_version") or "")
    gap = gap_of(gaps, version)
    if gap:
        return (False, f"Kubernetes {version}: {gap}")
    return (True, f"Kubernetes {version} with {gate_name.split('.', 1)[1]} on; no known gap")
