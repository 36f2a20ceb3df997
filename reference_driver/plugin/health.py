"""DRA device health (KEP-4680): ``NodeWatchResources`` streams the complete device list of this node's
pool, each HEALTHY (UNHEALTHY with the fault ``unhealthy-devices``, or while the runtime switch ``unhealthy``
names it: the Node annotation ``<driver>/unhealthy``, ignored under the fault ``health-never-unhealthy``; under
``health-all-unhealthy`` any name in it turns every device of the node UNHEALTHY),
right away and then every ``interval`` seconds, with a ``health_check_timeout_seconds`` of three intervals.
Served as v1alpha1 and v1 (identical messages, different packages). Source: dra-protocols.md §2.4; k8s.io/kubelet
pkg/apis/dra-health/{v1alpha1,v1}; upstream test/e2e/dra/health.go.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import grpc

from ..faults import Faults
from ..inventory.base import Snapshot

log = logging.getLogger(__name__)


class HealthService:
    """One version of ``DRAResourceHealth`` over the inventory."""

    def __init__(
        self,
        msgs,
        pool: str,
        snapshot: Callable[[], Snapshot],
        stop: threading.Event,
        faults: Faults = Faults(),
        interval: float = 10.0,
        unhealthy: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self.msgs, self.pool, self._snapshot, self._stop = msgs, pool, snapshot, stop
        self.faults, self.interval, self._unhealthy = faults, interval, unhealthy
        self.streams = 0

    def _message(self, device: str, switched: frozenset[str]) -> str:
        if self.faults.on("unhealthy-devices"):
            return "injected fault unhealthy-devices"
        if switched and self.faults.on("health-all-unhealthy"):
            return "injected fault health-all-unhealthy: the runtime switch names another device of this node"
        return "turned unhealthy by the runtime switch" if device in switched else ""

    def response(self):
        """One NodeWatchResourcesResponse with every device of the pool (read the switch once per response)."""
        m = self.msgs
        switched = frozenset() if self.faults.on("health-never-unhealthy") else self._unhealthy()
        now = int(time.time())
        return m.NodeWatchResourcesResponse(
            devices=[
                m.DeviceHealth(
                    device=m.DeviceIdentifier(pool_name=self.pool, device_name=d.name),
                    health=m.HealthStatus.Value("UNHEALTHY" if self._message(d.name, switched) else "HEALTHY"),
                    last_updated_time=now,
                    health_check_timeout_seconds=max(1, math.ceil(3 * self.interval)),
                    message=self._message(d.name, switched),
                )
                for d in self._snapshot().devices
            ]
        )

    def node_watch_resources(self, request, context):
        """Stream the device list until the client goes away or the server stops."""
        self.streams += 1
        log.info("health stream %s opened by %s", self.msgs.SERVICE, context.peer())
        while context.is_active() and not self._stop.is_set():
            yield self.response()
            self._stop.wait(self.interval)

    def handler(self) -> grpc.GenericRpcHandler:
        """gRPC handler for this version's ``DRAResourceHealth`` service."""
        m = self.msgs
        return grpc.method_handlers_generic_handler(
            m.SERVICE,
            {
                "NodeWatchResources": grpc.unary_stream_rpc_method_handler(
                    self.node_watch_resources,
                    request_deserializer=m.NodeWatchResourcesRequest.FromString,
                    response_serializer=m.NodeWatchResourcesResponse.SerializeToString,
                )
            },
        )
