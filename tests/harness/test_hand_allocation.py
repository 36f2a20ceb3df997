"""conformance/dra/hand_allocation.py: the free device a test-written allocation takes (issue 24 §3, features in
combination: found by the full profile on fixtures/self-validation/reference-status-binding.yaml)."""

from __future__ import annotations

import pytest

from conformance.dra.hand_allocation import free_device
from conformance.dra.inventory import Device, Inventory

DRIVER = "gpu.example.com"


class _K8s:
    """A client whose cluster has allocated ``taken`` (``[(pool, device)]``) of the driver."""

    def __init__(self, taken=()):
        self.claims = [{"status": {"allocation": {"devices": {"results": [
            {"driver": DRIVER, "pool": p, "device": d} for p, d in taken]}}}}]  # fmt: skip

    def list(self, kind, namespace):
        from conformance.core.objects import Obj  # noqa: PLC0415

        return [Obj(c) for c in self.claims]


def _dev(name: str, *, binding: bool = False, taint: bool = False) -> Device:
    return Device("node-a", "node-a", name, {}, {}, binding_conditions=("Ready",) * binding,
                  taints=({"key": "k", "effect": "NoSchedule"},) * taint)  # fmt: skip


def test_a_device_without_binding_conditions_is_taken_first_else_one_with_them():
    """Binding conditions only make the scheduler wait: a device without them is taken first, and a driver
    publishing them on every device (device status + binding conditions together) still gets a free one;
    tainted and allocated devices never; none free raises LookupError naming the allocated ones."""
    mixed = Inventory(DRIVER, [_dev("gpu-0", binding=True), _dev("gpu-1")])
    assert free_device(_K8s(), mixed).name == "gpu-1"
    every = Inventory(
        DRIVER, [_dev("gpu-0", binding=True, taint=True), _dev("gpu-1", binding=True), _dev("gpu-2", binding=True)]
    )
    assert free_device(_K8s([("node-a", "gpu-1")]), every).name == "gpu-2"
    with pytest.raises(LookupError, match="allocated now"):
        free_device(_K8s([("node-a", "gpu-1"), ("node-a", "gpu-2")]), every)
