"""DRA gRPC v1beta1 (``k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin``, kubelet 1.32+): thin adapter; its
``Device`` has no share_id."""

from __future__ import annotations

from ..state import DeviceState
from . import wire
from .dra import DraService


def service(state: DeviceState) -> DraService:
    """The v1beta1 DRAPlugin service over ``state``."""
    return DraService(state, wire.dra_v1beta1(), "v1beta1", has_share_id=False)
