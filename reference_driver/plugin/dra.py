"""One DRA service implementation over the state machine, parameterised by the message set of a version.

Every requested claim UID gets exactly one entry in the response map; a failing claim gets its error
string there (the kubelet reports it as FailedPrepareDynamicResources and retries), never a gRPC error
for the whole call. Source: dra-protocols.md §2.3; upstream test-driver kubeletplugin.go.
"""

from __future__ import annotations

import logging
import time

import grpc

from ..claims import ClaimError, ClaimRef
from ..state import DeviceState, UnprepareError

log = logging.getLogger(__name__)


class DraService:
    """NodePrepareResources / NodeUnprepareResources for one API version (``msgs`` from :mod:`wire`)."""

    def __init__(self, state: DeviceState, msgs, version: str, has_share_id: bool) -> None:
        self.state, self.msgs, self.version, self.has_share_id = state, msgs, version, has_share_id
        self.calls: dict[str, int] = {"NodePrepareResources": 0, "NodeUnprepareResources": 0}

    def node_prepare_resources(self, request, context):
        """Prepare every claim of the request; per-claim errors in the map."""
        self.calls["NodePrepareResources"] += 1
        resp = self.msgs.NodePrepareResourcesResponse()
        for claim in request.claims:
            ref = ClaimRef(claim.namespace, claim.name, claim.uid)
            start = time.monotonic()
            entry = resp.claims[claim.uid]
            try:
                for dev in self.state.prepare(ref):
                    out = entry.devices.add(
                        request_names=list(dev.request_names),
                        pool_name=dev.pool,
                        device_name=dev.device,
                        cdi_device_ids=list(dev.cdi_ids),
                    )
                    if dev.share_id and self.has_share_id:
                        out.share_id = dev.share_id
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
        for claim in request.claims:
            entry = resp.claims[claim.uid]
            try:
                self.state.unprepare(claim.uid)
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
