"""The plugin registration service the kubelet calls on the registration socket.

GetInfo answers type ``DRAPlugin``, the driver name, the DRA socket path as ``endpoint`` (a plain path:
the kubelet dials ``"unix:" + endpoint``) and the DRA services served, v1 first (kubelets >= 1.34 take the
first entry they know). NotifyRegistrationStatus is recorded and logged; a GetInfo that no status followed is
:meth:`RegistrationService.unanswered_since` (the server then re-offers its socket: server.py).
Source: k8s.io/kubelet pkg/apis/pluginregistration/v1; dra-protocols.md §1.3-1.4.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import grpc

from . import wire

log = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
V1BETA1_ONLY = ("v1beta1.DRAPlugin",)  # fault register-v1beta1-only: a pre-1.34 driver's advertisement


def dra_versions(faults) -> tuple[str, ...]:
    """The DRA services GetInfo advertises: v1 and v1beta1, or only v1beta1 under the fault
    ``register-v1beta1-only`` (the kubelet then calls the v1beta1 service although v1 is served)."""
    return V1BETA1_ONLY if faults.on("register-v1beta1-only") else SUPPORTED_VERSIONS


@dataclass(frozen=True)
class Status:
    """One NotifyRegistrationStatus call."""

    registered: bool
    error: str


class RegistrationService:
    """Answers GetInfo and records NotifyRegistrationStatus (``statuses``, ``registered`` event, and when the
    kubelet last asked: :meth:`unanswered_since`)."""

    def __init__(self, driver: str, endpoint: str, versions: tuple[str, ...] = SUPPORTED_VERSIONS) -> None:
        self.driver, self.endpoint, self.versions = driver, endpoint, versions
        self.statuses: list[Status] = []
        self.registered = threading.Event()
        self._asked: float | None = None  # time.monotonic() of the last GetInfo not followed by a status
        self._msgs = wire.registration()

    def unanswered_since(self) -> float | None:
        """``time.monotonic()`` of the kubelet's last GetInfo when no NotifyRegistrationStatus came after it; None
        when it has not asked, or answered (registered or not)."""
        return self._asked

    def forget_asked(self) -> None:
        """Forget an unanswered GetInfo (the socket was offered again: the kubelet asks anew)."""
        self._asked = None

    def get_info(self, request, context):
        """PluginInfo{type, name, endpoint, supported_versions}. Arms :meth:`unanswered_since` only while the
        plugin is not registered: once the kubelet registered it, a GetInfo with no status after it is a client
        probing the socket (the suite's own registration checks), and offering the socket again would make the
        kubelet re-register the plugin and cancel its NodePrepareResources calls in flight (make test s14: "rpc
        error: code = Canceled desc = grpc: the client connection is closing")."""
        if not self.registered.is_set():
            self._asked = time.monotonic()
        return self._msgs.PluginInfo(
            type=PLUGIN_TYPE, name=self.driver, endpoint=self.endpoint, supported_versions=list(self.versions)
        )

    def notify_registration_status(self, request, context):
        """Record the kubelet's verdict; always answers an empty RegistrationStatusResponse."""
        status = Status(request.plugin_registered, request.error)
        self.statuses.append(status)
        self._asked = None
        if status.registered:
            log.info("kubelet registered plugin %s", self.driver)
            self.registered.set()
        else:
            log.error("kubelet rejected plugin %s: %s", self.driver, status.error)
            self.registered.clear()
        return self._msgs.RegistrationStatusResponse()

    def handler(self) -> grpc.GenericRpcHandler:
        """gRPC handler for service ``pluginregistration.Registration``."""
        m = self._msgs
        return grpc.method_handlers_generic_handler(
            m.SERVICE,
            {
                "GetInfo": grpc.unary_unary_rpc_method_handler(
                    self.get_info,
                    request_deserializer=m.InfoRequest.FromString,
                    response_serializer=m.PluginInfo.SerializeToString,
                ),
                "NotifyRegistrationStatus": grpc.unary_unary_rpc_method_handler(
                    self.notify_registration_status,
                    request_deserializer=m.RegistrationStatus.FromString,
                    response_serializer=m.RegistrationStatusResponse.SerializeToString,
                ),
            },
        )
