"""A client of the kubelet PodResources API v1 over its unix socket (KEP-3695, KEP-2043), and the reshaping
of its answers that tests compare with allocations.

Source: kubelet ``<root>/pod-resources/kubelet.sock``; service ``v1.PodResourcesLister`` List/Get/
GetAllocatableResources (dra-protocols.md §3). Responses are returned as plain dicts (protobuf JSON names,
e.g. ``podResources``, ``dynamicResources``, ``claimResources``, ``cdiDevices``).
"""

from __future__ import annotations

from pathlib import Path

import grpc
from google.protobuf.json_format import MessageToDict

from conformance.core import errors
from conformance.node import unixsock
from conformance.node.unixsock import Dial

MAX_MESSAGE = 16 * 1024 * 1024  # bytes: clients raise the 4 MiB default for List (kubelet podresources client)


class PodResourcesError(errors.ConformanceError, grpc.RpcError):
    """A PodResources call failed. Like a ``grpc.Call`` error, ``code()`` is the ``grpc.StatusCode``
    (``NOT_FOUND``, ``UNAVAILABLE``...) and ``details()`` the kubelet's message (e.g. ``pod x in namespace y
    not found``), so harness code catching ``grpc.RpcError`` keeps working; suites catch it by this name."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"PodResources {method}: {code.name}: {details}")
        self.method, self._code, self._details = method, code, details

    def code(self) -> grpc.StatusCode:
        """The gRPC status code of the failed call."""
        return self._code

    def details(self) -> str:
        """The server's (or the channel's) message."""
        return self._details


def _stubs():
    try:
        from conformance.node import podresources_v1_pb2 as pb  # noqa: PLC0415
        from conformance.node import podresources_v1_pb2_grpc as pb_grpc  # noqa: PLC0415
    except ImportError as exc:
        raise errors.ConfigError(
            "PodResources stubs are not generated",
            source="conformance/node",
            fix="run `python -m conformance.protos` (make test does)",
        ) from exc
    return pb, pb_grpc


class PodResourcesClient:
    """Calls one kubelet's PodResources socket. ``timeout``: seconds per call; ``dial``: ``(socket, options)``
    -> a channel context (default: this host's unix socket; a helper pod's relay, exec_grpc.py). Errors:
    PodResourcesError."""

    def __init__(self, socket: Path | str, timeout: float = 10.0, dial: Dial = unixsock.channel) -> None:
        self.socket, self.timeout, self.dial = str(socket), timeout, dial

    def _call(self, method: str, request_name: str, **fields) -> dict:
        pb, pb_grpc = _stubs()
        try:
            with self.dial(self.socket, (("grpc.max_receive_message_length", MAX_MESSAGE),)) as channel:
                stub = pb_grpc.PodResourcesListerStub(channel)
                reply = getattr(stub, method)(getattr(pb, request_name)(**fields), timeout=self.timeout)
        except grpc.RpcError as exc:
            call = exc if isinstance(exc, grpc.Call) else None
            raise PodResourcesError(
                method, call.code() if call else grpc.StatusCode.UNKNOWN, call.details() if call else str(exc)
            ) from exc
        return MessageToDict(reply, preserving_proto_field_name=False)

    def list(self) -> list[dict]:
        """``List``: pod resources of every active pod on the node."""
        return self._call("List", "ListPodResourcesRequest").get("podResources", [])

    def get(self, pod: str, namespace: str) -> dict:
        """``Get`` (gate KubeletPodResourcesGet): one pod's resources."""
        return self._call("Get", "GetPodResourcesRequest", pod_name=pod, pod_namespace=namespace).get(
            "podResources", {}
        )

    def allocatable(self) -> dict:
        """``GetAllocatableResources``: the node's device-plugin devices, CPU IDs and memory (no DRA devices)."""
        return self._call("GetAllocatableResources", "AllocatableResourcesRequest")

    def entry(self, pod: str, namespace: str) -> dict:
        """The ``List`` entry of one pod ({} when the kubelet does not list it)."""
        for item in self.list():
            if item.get("name") == pod and item.get("namespace") == namespace:
                return item
        return {}

    def dynamic_resources(self, pod: str, namespace: str) -> dict[str, list[dict]]:
        """``{container: [DynamicResource...]}`` of one pod from ``List`` (works without the Get gate)."""
        return claims_by_container(self.entry(pod, namespace))


def claims_by_container(entry: dict) -> dict[str, list[dict]]:
    """``{container: [DynamicResource dict]}`` of one PodResources entry (containers without DRA -> [])."""
    return {c.get("name"): list(c.get("dynamicResources") or []) for c in entry.get("containers") or []}


def reported_devices(dynamic_resources: list[dict]) -> set[tuple[str, str, str]]:
    """``{(driver, pool, device)}`` across the ClaimResources of DynamicResource entries."""
    return {
        (r.get("driverName", ""), r.get("poolName", ""), r.get("deviceName", ""))
        for dr in dynamic_resources
        for r in dr.get("claimResources") or []
    }


def reported_cdi_ids(dynamic_resources: list[dict]) -> set[str]:
    """Every CDI device name across the ClaimResources of DynamicResource entries."""
    return {
        c.get("name")
        for dr in dynamic_resources
        for r in dr.get("claimResources") or []
        for c in r.get("cdiDevices") or []
    }


def for_claim(dynamic_resources: list[dict], claim) -> list[dict]:
    """The DynamicResource entries that name ``claim`` (``claimName`` and ``claimNamespace`` equal to its
    name and namespace), compared as exact values."""
    return [
        dr
        for dr in dynamic_resources
        if dr.get("claimName") == claim.name and dr.get("claimNamespace") == claim.namespace
    ]


def allocatable_device_ids(reply: dict) -> set[str]:
    """Every device ID of a ``GetAllocatableResources`` reply (``devices[].deviceIds``), as exact values."""
    return {i for d in reply.get("devices") or [] for i in d.get("deviceIds") or []}


def allocated_devices(claim) -> set[tuple[str, str, str]]:
    """``{(driver, pool, device)}`` of a ResourceClaim's allocation results (to compare with
    :func:`reported_devices`)."""
    return {(r.driver, r.pool, r.device) for r in claim.results}
