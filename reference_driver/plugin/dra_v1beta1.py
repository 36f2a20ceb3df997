"""DRA gRPC v1beta1 (``k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin``, kubelet 1.32+): thin adapter; its
``Device`` has no share_id."""

from __future__ import annotations

import threading

from ..state import DeviceState
from . import wire
from .dra import DraService


def service(state: DeviceState, stopping: threading.Event | None = None) -> DraService:
    """The v1beta1 DRAPlugin service over ``state``; ``stopping`` is set when the plugin stops."""
    return DraService(state, wire.dra_v1beta1(), "v1beta1", has_share_id=False, stopping=stopping)
