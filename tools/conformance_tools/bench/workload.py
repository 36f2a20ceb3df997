"""The benchmark's objects (pure builders): the DeviceClass, per-variant ResourceClaimTemplates or shared
ResourceClaims, and the pods, all pinned to the kwok fake nodes (node selector + toleration of the fake-node
taint, lab/conformance_lab/local/kwok.py).

API: resource.k8s.io/v1 DeviceRequest ``exactly`` (selectors, count) / ``firstAvailable`` (KEP-4816),
DeviceConstraint ``matchAttribute``; core/v1 PodSpec ``resourceClaims`` and extended-resource limits.
Upstream counterpart: test/integration/scheduler_perf/dra (SchedulingWithResourceClaimTemplate...).
"""

from __future__ import annotations

import math

from conformance_tools.bench.config import CLASSIC

BENCH_LABEL = "dra-conformance.test/bench"
CLASS_NAME = "bench-gpu.dra-conformance.test"
EXTENDED_RESOURCE = "example.com/gpu"
FAKE_NODE_LABEL = ("dra-conformance.test/node", "kwok")
FAKE_TAINT_KEY = "kwok.x-k8s.io/node"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


def devices_per_pod(variant: str) -> int:
    """Devices one pod's claim takes (match-attribute asks for a pair on one PCIe root)."""
    return 2 if variant == "match-attribute" else 1


def pods_for(variant: str, nodes: int, devices: int, pods: int, share: int) -> int:
    """Pods of ``variant`` the fleet can hold, at most ``pods``: one device each (two for match-attribute,
    pairs on one PCIe root of 2 devices), ``share`` pods per device for shared claims."""
    if variant == "match-attribute":
        room = nodes * (devices // 2)
    elif variant == "shared":
        room = nodes * devices * share
    else:
        room = nodes * devices
    return min(pods, room)


def device_class(driver: str, bench_id: str) -> dict:
    """The DeviceClass selecting every device of ``driver``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS_NAME, "labels": {BENCH_LABEL: bench_id}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_spec(variant: str, driver: str, selector: str = "") -> dict:
    """The ResourceClaimSpec of one pod's claim for DRA ``variant``; ``selector``: the CEL expression of the
    ``cel`` variant (default: one on the reference driver's model and memory; a mirror passes its own)."""
    exactly: dict = {"deviceClassName": CLASS_NAME}
    spec: dict = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    if variant == "cel":
        expression = selector or (
            f'device.attributes["{driver}"].model.startsWith("DRA") && '
            f'device.capacity["{driver}"].memory.compareTo(quantity("40Gi")) >= 0'
        )
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    elif variant == "match-attribute":
        exactly["count"] = 2
        spec["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": PCIE_ROOT}]
    elif variant == "prioritized":
        never = {"cel": {"expression": f'device.driver != "{driver}"'}}  # the class selects only the driver's
        spec["devices"]["requests"] = [
            {
                "name": "gpu",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": CLASS_NAME, "selectors": [never]},
                    {"name": "any", "deviceClassName": CLASS_NAME},
                ],
            }
        ]
    return spec


def namespace(name: str, bench_id: str) -> dict:
    """A Namespace labelled with the bench ID (the tear-down deletes by that label)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {BENCH_LABEL: bench_id}}}


def claim_objects(variant: str, driver: str, pods: int, share: int, selector: str = "") -> list[dict]:
    """The ResourceClaimTemplate ``gpu`` (or, for ``shared``, the claims ``shared-<i>``; none for classic);
    ``selector``: see :func:`claim_spec`."""
    if variant == CLASSIC:
        return []
    if variant == "shared":
        return [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"shared-{i}"},
                "spec": claim_spec("template", driver),
            }
            for i in range(math.ceil(pods / share))
        ]
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu"},
            "spec": {"spec": claim_spec(variant, driver, selector)},
        }
    ]


def pod(variant: str, index: int, image: str, share: int) -> dict:
    """Pod ``p-<index>`` of ``variant`` on a fake node."""
    container: dict = {"name": "c", "image": image, "imagePullPolicy": "IfNotPresent"}
    spec: dict = {
        "containers": [container],
        "nodeSelector": {FAKE_NODE_LABEL[0]: FAKE_NODE_LABEL[1]},
        "tolerations": [{"key": FAKE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
    }
    if variant == CLASSIC:
        container["resources"] = {"limits": {EXTENDED_RESOURCE: "1"}}
    else:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        source = (
            {"resourceClaimName": f"shared-{index // share}"}
            if variant == "shared"
            else {"resourceClaimTemplateName": "gpu"}
        )
        spec["resourceClaims"] = [{"name": "gpu", **source}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{index}"}, "spec": spec}


def extended_resource_patch(devices: int) -> dict:
    """Node status patch exposing ``devices`` as the classic extended resource ``example.com/gpu``."""
    value = str(devices)
    return {"status": {"capacity": {EXTENDED_RESOURCE: value}, "allocatable": {EXTENDED_RESOURCE: value}}}
