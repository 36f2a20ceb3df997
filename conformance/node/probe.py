"""What a container shows: the driver profile's visibility probe, its opaque-config marker and its
admin-access signal, matched against the container's output.

The output comes from the API (pods/log); when the API server cannot reach the kubelet, from the node's CRI
log files through node access. One probe hit is one device or request (``DRA_GPU_DEVICE_<n>=``,
``GPU_DEVICE_<n>=``, ``claim_<c>_<r>=true``).
Sources: KEP-5970 behaviour 5 (driver-injected env through CDI); ai-conformance KAR-0049
(MultiContainerIsolationTest); dra-example-driver ``DRA_ADMIN_ACCESS=true`` CDI env for adminAccess results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from conformance.core.errors import ApiError
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s
from conformance.k8s.objects import Obj

EVIDENCE_TAIL = 2000  # characters of output shown in assertion messages


class Probe:
    """Reads a container's output and matches the profile. ``node_access``: None when the cluster offers
    none (then a pods/log failure is raised as the ApiError it is)."""

    def __init__(self, k8s: K8s, profile: DriverProfile, node_access=None) -> None:
        self.k8s, self.profile, self.node_access = k8s, profile, node_access

    def read(self, pod: Obj, container: str | None = None) -> tuple[str, str]:
        """``(output, source note)`` of the container (default: the first); the note is "" for pods/log and
        says why the node's log files were read otherwise. Raises ApiError (no node access) or
        NodeAccessUnavailable (no log file either)."""
        try:
            return self.k8s.logs(pod, container=container, retry=False), ""
        except ApiError as exc:
            if self.node_access is None:
                raise
            current = self.k8s.get("Pod", pod.name, pod.namespace)
            name = container or current.get("spec.containers.0.name")
            text = self.node_access.container_log(
                current.get("spec.nodeName"), pod.namespace, pod.name, current.uid, name
            )
            return text, f"(read from the node's log files: pods/log failed with {exc.status} {exc.reason})"

    def output(self, pod: Obj, container: str | None = None) -> str:
        """The container's output (``container`` default: the first container)."""
        return self.read(pod, container)[0]

    def hits(self, pod: Obj, container: str | None = None) -> list[str]:
        """The distinct lines of the output that match the profile's visibility regex (one per device)."""
        vis = self.profile.visibility
        pattern = vis.env_regex or vis.expected_output
        return sorted(set(m.group(0) for m in re.finditer(pattern, self.output(pod, container), re.M)))

    def sees(self, pod: Obj, container: str | None = None) -> tuple[bool, str]:
        """``(visible, evidence)``: whether the profile's visibility probe matched the output."""
        text, note = self.read(pod, container)
        visible, why = self.profile.visibility.matches(text)
        return visible, f"{why}\n{note}" if note else why

    def shows_devices(
        self, pod: Obj, devices: Iterable[str], universe: Iterable[str], container: str | None = None
    ) -> tuple[bool, str]:
        """Whether the container shows exactly ``devices`` (names) among ``universe`` (all device names the
        driver publishes on that node). Probes that name devices (``GPU_DEVICE_0=gpu-0``) are compared by
        name; probes that only name claims/requests (upstream test driver ``claim_<c>_<r>=true``) can only
        prove visibility, so then one hit suffices. Returns ``(ok, evidence)``."""
        hits = self.hits(pod, container)
        named = {d for d in universe if any(re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", h) for h in hits)}
        if hits and not named:
            return True, f"probe names no device (per-request probe); visible: {hits}"
        return named == set(devices), (
            f"expected {sorted(devices)}, probe shows {sorted(named)}; " + self.evidence(pod, container)
        )

    def shows_allocation(self, pod: Obj, claim: Obj, inventory, container: str | None = None) -> tuple[bool, str]:
        """:meth:`shows_devices` for the devices of ``claim``'s allocation results among those ``inventory``
        (:class:`~conformance.k8s.inventory.Inventory`) publishes on the pod's node. Returns ``(ok, evidence)``.
        Raises ValueError for a pod not bound to a node (pass the pod a wait returned): without the node there are
        no device names to compare and any output would pass."""
        node = pod.get("spec.nodeName")
        if not node:
            raise ValueError(
                f"pod {pod.namespace}/{pod.name} has no spec.nodeName: pass the pod waits.pod_running returned"
            )
        return self.shows_devices(pod, [r.device for r in claim.results], inventory.names_on(node), container)

    def shows_config(self, pod: Obj, container: str | None = None) -> bool:
        """Whether the profile's opaque-config marker (``opaque_config.shows_as``) is in the output."""
        return bool(re.search(self.profile.opaque_shows_as, self.output(pod, container), re.M))

    def shows_admin_access(self, pod: Obj, container: str | None = None) -> bool:
        """Whether the driver's admin-access signal (profile ``admin_access_signal``) is in the output."""
        return bool(re.search(self.profile.admin_access_signal, self.output(pod, container), re.M))

    def evidence(self, pod: Obj, container: str | None = None) -> str:
        """The output's tail, for assertion messages."""
        return f"output of {pod.name}/{container or 'first container'}:\n{self.output(pod, container)[-EVIDENCE_TAIL:]}"
