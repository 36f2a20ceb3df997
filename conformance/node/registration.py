"""Ask kubelet plugin registration sockets who they are: the pluginregistration v1 ``Registration.GetInfo``
call the kubelet itself makes, over the real unix socket, with messages compiled from our own .proto
(``python -m conformance.protos``), like the PodResources client.

Sources: k8s.io/kubelet/pkg/apis/pluginregistration/v1 (service ``pluginregistration.Registration``, method
``GetInfo(InfoRequest) returns (PluginInfo)``); dra-protocols.md §1 (a DRA plugin answers type
``DRAPlugin``). Socket file names are not a contract (our reference driver hashes long paths), so a driver
is identified by its answer.
"""

from __future__ import annotations

from pathlib import Path

import grpc
from google.protobuf.json_format import MessageToDict

from conformance.core import errors
from conformance.core.errors import ApiError
from conformance.node import kubelet, unixsock
from conformance.node.base import NodeAccessUnavailable

GET_INFO = "/pluginregistration.Registration/GetInfo"  # wire method name (upstream proto package)
TIMEOUT_S = 10.0


def _messages():
    try:
        from conformance.node import pluginregistration_v1_pb2 as pb  # noqa: PLC0415
    except ImportError as exc:
        raise errors.ConfigError(
            "plugin registration stubs are not generated",
            source="conformance/node",
            fix="run `python -m conformance.protos` (make test does)",
        ) from exc
    return pb


def get_info(socket: Path | str, timeout: float = TIMEOUT_S, dial: unixsock.Dial = unixsock.channel) -> dict:
    """GetInfo of one registration socket: ``{type, name, endpoint, supported_versions}`` (missing fields
    empty); ``dial`` as for :class:`conformance.node.podresources.PodResourcesClient`. Raises grpc.RpcError when
    the socket does not answer."""
    pb = _messages()
    with dial(socket) as channel:
        call = channel.unary_unary(
            GET_INFO,
            request_serializer=pb.InfoRequest.SerializeToString,
            response_deserializer=pb.PluginInfo.FromString,
        )
        reply = call(pb.InfoRequest(), timeout=timeout)
    info = MessageToDict(reply, preserving_proto_field_name=True)
    return {
        "type": info.get("type", ""),
        "name": info.get("name", ""),
        "endpoint": info.get("endpoint", ""),
        "supported_versions": list(info.get("supported_versions") or []),
    }


def plugins_in(registry: Path | str, timeout: float = TIMEOUT_S) -> list[dict]:
    """GetInfo answers of every ``*.sock`` in a plugin registry directory, each with its ``socket`` file
    name; a socket that does not answer gives ``{"socket": ..., "error": <gRPC status name>}``."""
    out = []
    for sock in sorted(Path(registry).glob("*.sock")):
        try:
            out.append({**get_info(sock, timeout), "socket": sock.name})
        except grpc.RpcError as exc:
            out.append({"socket": sock.name, "error": str(exc.code())})
    return out


def access(node_access, node: str) -> tuple[bool, str]:
    """``(able, evidence)``: whether ``node_access`` can ask ``node``'s registration sockets GetInfo (the
    ``plugin_registration`` capability). Decided by the access mode, not by the driver: a reachable registry
    with no answering socket is still able (the test then fails on the driver)."""
    try:
        answers = node_access.plugin_info(node)
    except (NodeAccessUnavailable, OSError) as exc:
        return False, f"node access {node_access.mode} cannot call registration sockets on {node}: {exc}"
    return True, f"node access {node_access.mode} reached {len(answers)} registration socket(s) on {node}"


def kubelet_uses(k8s, node_access, node: str, driver: str) -> tuple[bool, str]:
    """``(registered, evidence)``: whether ``driver`` is registered with ``node``'s kubelet now: a registration
    socket in the node's plugin registry answers GetInfo with the driver's name and the kubelet's plugin
    manager holds that socket as registered (``plugin_manager_total_plugins`` state
    ``actual_state_of_world``, :mod:`conformance.node.kubelet`). Errors reading either count as not
    registered (the evidence names them)."""
    try:
        answers = [a for a in node_access.plugin_info(node) if a.get("name") == driver]
    except (NodeAccessUnavailable, OSError) as exc:
        return False, f"plugin registry of {node} unreadable: {exc}"
    try:
        accepted = kubelet.accepted_sockets(kubelet.metrics(k8s, node))
    except (ApiError, OSError) as exc:
        return False, f"GetInfo answers {answers}; kubelet metrics of {node} unreadable: {exc}"
    ok = any(kubelet.accepts_socket(accepted, a["socket"]) for a in answers)
    return ok, f"GetInfo answers of {driver} on {node}: {answers}; sockets the kubelet registered: {accepted}"
