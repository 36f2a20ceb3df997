"""DRA gRPC v1 (``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``, kubelet 1.34+): thin adapter; carries
``Device.share_id`` (pb 5, 1.35+) for consumable-capacity shares."""

from __future__ import annotations

import threading

from ..state import DeviceState
from . import wire
from .dra import DraService


def service(state: DeviceState, stopping: threading.Event | None = None) -> DraService:
    """The v1 DRAPlugin service over ``state``; ``stopping`` is set when the plugin stops."""
    return DraService(state, wire.dra_v1(), "v1", has_share_id=True, stopping=stopping)
