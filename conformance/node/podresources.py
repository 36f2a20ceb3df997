"""A client of the kubelet PodResources API v1 over its unix socket (KEP-3695, KEP-2043).

Source: kubelet ``<root>/pod-resources/kubelet.sock``; service ``v1.PodResourcesLister`` List/Get
(dra-protocols.md §3). Responses are returned as plain dicts (protobuf JSON names, e.g. ``podResources``,
``dynamicResources``, ``claimResources``, ``cdiDevices``).
"""
from __future__ import annotations

from pathlib import Path

import grpc
from google.protobuf.json_format import MessageToDict

from conformance.core import errors

MAX_MESSAGE = 16 * 1024 * 1024  # bytes: clients raise the 4 MiB default for List (kubelet podresources client)


def _stubs():
    try:
        from . import podresources_v1_pb2 as pb, podresources_v1_pb2_grpc as pb_grpc  # noqa: PLC0415
    except ImportError as exc:
        raise errors.ConfigError("PodResources stubs are not generated", source="conformance/node",
                                 fix="run `python -m conformance.toolchain protos` (make test does)") from exc
    return pb, pb_grpc


class PodResourcesClient:
    """Calls one kubelet's PodResources socket. ``timeout``: seconds per call. Errors: grpc.RpcError."""

    def __init__(self, socket: Path | str, timeout: float = 10.0) -> None:
        self.socket, self.timeout = str(socket), timeout

    def _call(self, method: str, request_name: str, **fields):
        pb, pb_grpc = _stubs()
        with grpc.insecure_channel(f"unix://{self.socket}", options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE)]) as channel:
            stub = pb_grpc.PodResourcesListerStub(channel)
            reply = getattr(stub, method)(getattr(pb, request_name)(**fields), timeout=self.timeout)
        return MessageToDict(reply, preserving_proto_field_name=False)

    def list(self) -> list[dict]:
        """``List``: pod resources of every active pod on the node."""
        return self._call("List", "ListPodResourcesRequest").get("podResources", [])

    def get(self, pod: str, namespace: str) -> dict:
        """``Get`` (gate KubeletPodResourcesGet): one pod's resources."""
        return self._call("Get", "GetPodResourcesRequest", pod_name=pod, pod_namespace=namespace).get(
            "podResources", {})

    def dynamic_resources(self, pod: str, namespace: str) -> dict[str, list[dict]]:
        """``{container: [DynamicResource...]}`` of one pod from ``List`` (works without the Get gate)."""
        for entry in self.list():
            if entry.get("name") == pod and entry.get("namespace") == namespace:
                return {c.get("name"): c.get("dynamicResources", []) for c in entry.get("containers", [])}
        return {}
