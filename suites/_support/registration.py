"""Ask each kubelet plugin registration socket who it is: the pluginregistration v1 ``Registration.GetInfo``
call the kubelet itself makes, over the real unix socket, decoded without generated stubs.

Sources: k8s.io/kubelet/pkg/apis/pluginregistration/v1 (service ``pluginregistration.Registration``, method
``GetInfo(InfoRequest) returns (PluginInfo)``; PluginInfo fields type=1, name=2, endpoint=3,
supported_versions=4); dra-protocols.md §1 (a DRA plugin answers type ``DRAPlugin``). Socket file names are
not a contract (our reference driver hashes long paths), so the driver is identified by its answer.
Belongs in: conformance/node/ (NodeAccess.plugin_info(node)).
"""
from __future__ import annotations

from pathlib import Path

import grpc

GET_INFO = "/pluginregistration.Registration/GetInfo"
FIELDS = {1: "type", 2: "name", 3: "endpoint", 4: "supported_versions"}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def decode_plugin_info(data: bytes) -> dict:
    """``{type, name, endpoint, supported_versions}`` from a serialized PluginInfo (length-delimited fields
    only; other wire types are skipped)."""
    out: dict = {"type": "", "name": "", "endpoint": "", "supported_versions": []}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size].decode(errors="replace"), pos + size
            if FIELDS.get(number) == "supported_versions":
                out["supported_versions"].append(value)
            elif number in FIELDS:
                out[FIELDS[number]] = value
        elif wire == 0:
            _, pos = _varint(data, pos)
        else:
            raise ValueError(f"unexpected wire type {wire} in PluginInfo")
    return out


def get_info(socket: Path, timeout: float = 10.0) -> dict:
    """Call GetInfo on one registration socket; raises grpc.RpcError."""
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        call = channel.unary_unary(GET_INFO, request_serializer=lambda _req: b"",
                                   response_deserializer=lambda raw: raw)
        return decode_plugin_info(call(None, timeout=timeout))


def registry_dir(node_access, node: str) -> Path:
    """The node's plugin registry directory on this host (local node access only)."""
    for n in getattr(getattr(node_access, "cluster", None), "nodes", []):
        if n.name == node:
            return Path(n.plugin_registry_dir)
    raise LookupError(f"node access {getattr(node_access, 'mode', '?')} exposes no registry path for {node}")


def plugins(node_access, node: str) -> list[dict]:
    """GetInfo answers of every ``*.sock`` in the node's plugin registry (unanswering sockets are skipped
    with ``{"error": ...}``)."""
    out = []
    for sock in sorted(registry_dir(node_access, node).glob("*.sock")):
        try:
            out.append({**get_info(sock), "socket": sock.name})
        except grpc.RpcError as exc:
            out.append({"socket": sock.name, "error": str(exc.code())})
    return out
