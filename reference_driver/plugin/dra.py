"""One DRA service implementation over the state machine, parameterised by the message set of a version.

Every requested claim UID gets exactly one entry in the response map; a failing claim gets its error
string there (the kubelet reports it as FailedPrepareDynamicResources and retries), never a gRPC error
for the whole call. Source: dra-protocols.md §2.3; upstream test-driver kubeletplugin.go.

Fault ``slow-prepare``: NodePrepareResources first waits :data:`SLOW_PREPARE_S`, longer than the kubelet's
deadline for every DRA call (45 s, ``defaultClientCallTimeout`` in k8s.io/kubernetes
pkg/kubelet/cm/dra/plugin/dra_plugin.go). The wait ends early, and the claims are not prepared, when the
caller gives up (deadline exceeded) or the plugin stops, so nothing is prepared behind the kubelet's back
and the driver still stops promptly.
"""

from __future__ import annotations

import logging
import threading
import time

import grpc

from ..claims import ClaimError, ClaimRef
from ..state import DeviceState, UnprepareError

log = logging.getLogger(__name__)
SLOW_PREPARE_S = 50.0  # seconds: past the kubelet's 45 s defaultClientCallTimeout (fault slow-prepare)
SLOW_POLL_S = 0.2  # seconds between checks for a gone caller or a stopping plugin during that wait
BUSY_HOLD_S = 2.0  # seconds each NodePrepareResources takes with the fault prepare-not-concurrent


class DraService:
    """NodePrepareResources / NodeUnprepareResources for one API version (``msgs`` from :mod:`wire`)."""

    def __init__(
        self, state: DeviceState, msgs, version: str, has_share_id: bool, stopping: threading.Event | None = None
    ) -> None:
        self.state, self.msgs, self.version, self.has_share_id = state, msgs, version, has_share_id
        self.stopping = stopping or threading.Event()
        self.slow_prepare_s = SLOW_PREPARE_S
        self.calls: dict[str, int] = {"NodePrepareResources": 0, "NodeUnprepareResources": 0}
        # called as after_prepare(ref, devices) after a claim was prepared (device status, KEP-4817)
        self.after_prepare = None
        self._busy = threading.Lock()  # fault prepare-not-concurrent: held while a prepare call is answered

    def _waited_past_deadline(self, context) -> bool:
        """Fault ``slow-prepare``: wait ``slow_prepare_s`` seconds; False when the caller went away (its
        deadline passed) or the plugin is stopping first."""
        end = time.monotonic() + self.slow_prepare_s
        while time.monotonic() < end:
            if self.stopping.wait(SLOW_POLL_S) or (context is not None and not context.is_active()):
                return False
        return True

    def _answered(self, claims) -> list:
        """The claims of a request this service answers: all of them; only the first with the fault
        ``multi-claim-first-only`` (the others get no entry, which the kubelet reports as skipped)."""
        return list(claims)[:1] if self.state.faults.on("multi-claim-first-only") else list(claims)

    def node_prepare_resources(self, request, context):
        """Prepare every claim of the request; per-claim errors in the map. Fault ``prepare-not-concurrent``:
        each call holds the service :data:`BUSY_HOLD_S` seconds, and a call arriving meanwhile fails every claim."""
        self.calls["NodePrepareResources"] += 1
        if not self.state.faults.on("prepare-not-concurrent"):
            return self._prepare_resources(request, context)
        if not self._busy.acquire(blocking=False):
            resp = self.msgs.NodePrepareResourcesResponse()
            for claim in request.claims:
                resp.claims[claim.uid].error = (
                    f"ResourceClaim {claim.namespace}/{claim.name}: busy, another NodePrepareResources is in "
                    "progress (injected fault prepare-not-concurrent)"
                )
            return resp
        try:
            self.stopping.wait(BUSY_HOLD_S)
            return self._prepare_resources(request, context)
        finally:
            self._busy.release()

    def _prepare_resources(self, request, context):
        resp = self.msgs.NodePrepareResourcesResponse()
        if self.state.faults.on("slow-prepare") and not self._waited_past_deadline(context):
            for claim in request.claims:
                resp.claims[claim.uid].error = "injected fault slow-prepare: abandoned (caller gone or plugin stopping)"
            log.info("%s NodePrepareResources abandoned (fault slow-prepare)", self.version)
            return resp
        for claim in self._answered(request.claims):
            ref = ClaimRef(claim.namespace, claim.name, claim.uid)
            start = time.monotonic()
            entry = resp.claims[claim.uid]
            try:
                prepared = self.state.prepare(ref)
                for dev in prepared:
                    out = entry.devices.add(
                        request_names=list(dev.request_names),
                        pool_name=dev.pool,
                        device_name=dev.device,
                        cdi_device_ids=list(dev.cdi_ids),
                    )
                    if dev.share_id and self.has_share_id:
                        out.share_id = dev.share_id
                if self.after_prepare is not None:
                    self.after_prepare(ref, prepared)
            except ClaimError as err:
                entry.Clear()
                entry.error = str(err)
            except Exception as err:  # noqa: BLE001 - never fail the whole call for one claim
                log.exception("prepare of %s failed", ref)
                entry.Clear()
                entry.error = f"{ref}: internal error: {err}"
            log.info(
                "%s NodePrepareResources %s: %s in %.1f ms",
                self.version,
                ref,
                entry.error or f"{len(entry.devices)} device(s)",
                (time.monotonic() - start) * 1000,
            )
        return resp

    def node_unprepare_resources(self, request, context):
        """Unprepare every claim of the request; unknown claims succeed."""
        self.calls["NodeUnprepareResources"] += 1
        resp = self.msgs.NodeUnprepareResourcesResponse()
        for claim in self._answered(request.claims):
            entry = resp.claims[claim.uid]
            try:
                self.state.unprepare(claim.uid, ClaimRef(claim.namespace, claim.name, claim.uid))
            except UnprepareError as err:
                entry.error = str(err)
            except Exception as err:  # noqa: BLE001
                log.exception("unprepare of %s failed", claim.uid)
                entry.error = f"claim UID {claim.uid}: internal error: {err}"
            log.info(
                "%s NodeUnprepareResources %s/%s (%s): %s",
                self.version,
                claim.namespace,
                claim.name,
                claim.uid,
                entry.error or "ok",
            )
        return resp

    def handler(self) -> grpc.GenericRpcHandler:
        """gRPC handler for this version's ``DRAPlugin`` service."""
        m = self.msgs
        return grpc.method_handlers_generic_handler(
            m.SERVICE,
            {
                "NodePrepareResources": grpc.unary_unary_rpc_method_handler(
                    self.node_prepare_resources,
                    request_deserializer=m.NodePrepareResourcesRequest.FromString,
                    response_serializer=m.NodePrepareResourcesResponse.SerializeToString,
                ),
                "NodeUnprepareResources": grpc.unary_unary_rpc_method_handler(
                    self.node_unprepare_resources,
                    request_deserializer=m.NodeUnprepareResourcesRequest.FromString,
                    response_serializer=m.NodeUnprepareResourcesResponse.SerializeToString,
                ),
            },
        )
