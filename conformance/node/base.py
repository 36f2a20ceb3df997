"""The NodeAccess contract: what the harness can do on a node beyond the API (one Protocol)."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from .podresources import PodResourcesClient


class NodeAccessUnavailable(Exception):
    """The node access implementation cannot do this operation (the message says why)."""


@runtime_checkable
class NodeAccess(Protocol):
    """Node-level access for one cluster. ``mode``: local | kind | privileged-pod.

    ``probe()`` -> ``(available, evidence)`` (checked once per run); ``cdi_specs(node)`` -> ``{file name:
    text}`` of the node's CDI spec directories; ``plugin_sockets(node)`` -> file names in the kubelet plugin
    registry; ``plugin_info(node)`` -> the GetInfo answers of those sockets (``[{type, name, endpoint,
    supported_versions, socket}]``); ``pod_resources(node)`` -> a PodResources client; ``container_log(...)`` -> a container's
    output from the node's log files; ``restart_kubelet(node)`` (disruptive).
    Operations a mode cannot do raise :class:`NodeAccessUnavailable`.
    """

    mode: str

    def probe(self) -> tuple[bool, str]: ...

    def cdi_specs(self, node: str) -> dict[str, str]: ...

    def plugin_sockets(self, node: str) -> list[str]: ...

    def plugin_info(self, node: str) -> list[dict]: ...

    def pod_resources(self, node: str) -> PodResourcesClient: ...

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str: ...

    def restart_kubelet(self, node: str) -> None: ...

    def can_restart_kubelet(self) -> tuple[bool, str]: ...
