"""What a container shows: the profile's visibility probe and opaque-config marker, counted per container.

The harness fixture ``device_visible`` answers yes/no; suites also need *how many* devices a container sees
(one probe hit per device or request: ``DRA_GPU_DEVICE_<n>=``, ``GPU_DEVICE_<n>=``, ``claim_<c>_<r>=true``),
whether the opaque config shows, and whether the driver signalled admin access.
Sources: KEP-5970 behaviour 5 (driver-injected env through CDI); ai-conformance KAR-0049
(MultiContainerIsolationTest); dra-example-driver ``DRA_ADMIN_ACCESS=true`` CDI env for adminAccess results.
Belongs in: conformance/plugin.py (a ``probe`` fixture) and the driver profile (an admin-access marker).
"""
from __future__ import annotations

import re

from conformance.api import ApiError


class Probe:
    """Reads a container's output (API pods/log, else the node's CRI log files) and matches the profile."""

    def __init__(self, k8s, profile, node_access) -> None:
        self.k8s, self.profile, self.node_access = k8s, profile, node_access

    def output(self, pod, container: str | None = None) -> str:
        """The container's output (``container`` default: the first container)."""
        try:
            return self.k8s.logs(pod, container=container, retry=False)
        except ApiError:
            if self.node_access is None:
                raise
            current = self.k8s.get("Pod", pod.name, pod.namespace)
            name = container or current.get("spec.containers.0.name")
            return self.node_access.container_log(current.get("spec.nodeName"), pod.namespace, pod.name,
                                                  current.uid, name)

    def hits(self, pod, container: str | None = None) -> list[str]:
        """The distinct lines of the output that match the profile's visibility regex (one per device)."""
        vis = self.profile.visibility
        pattern = vis.env_regex or vis.expected_output
        return sorted(set(m.group(0) for m in re.finditer(pattern, self.output(pod, container), re.M)))

    def shows_devices(self, pod, devices, universe, container: str | None = None) -> tuple[bool, str]:
        """Whether the container shows exactly ``devices`` (names) among ``universe`` (all device names the
        driver publishes on that node). Probes that name devices (``GPU_DEVICE_0=gpu-0``) are compared by
        name; probes that only name claims/requests (upstream test driver ``claim_<c>_<r>=true``) can only
        prove visibility, so then one hit suffices. Returns ``(ok, evidence)``."""
        hits = self.hits(pod, container)
        named = {d for d in universe if any(re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", h) for h in hits)}
        if hits and not named:
            return True, f"probe names no device (per-request probe); visible: {hits}"
        return named == set(devices), f"expected {sorted(devices)}, probe shows {sorted(named)}; " + \
            self.evidence(pod, container)

    def sees(self, pod, container: str | None = None) -> tuple[bool, str]:
        """``(visible, evidence)`` like the harness's ``device_visible``."""
        return self.profile.visibility.matches(self.output(pod, container))

    def shows_config(self, pod, container: str | None = None) -> bool:
        """Whether the profile's opaque-config marker (``opaque_config.shows_as``) is in the output."""
        return bool(re.search(self.profile.opaque_shows_as, self.output(pod, container), re.M))

    def shows_admin_access(self, pod, container: str | None = None) -> bool:
        """Whether the driver's admin-access signal (profile ``admin_access_signal``) is in the output."""
        return bool(re.search(self.profile.admin_access_signal, self.output(pod, container), re.M))

    def evidence(self, pod, container: str | None = None) -> str:
        """The output's tail, for assertion messages."""
        return f"output of {pod.name}/{container or 'first container'}:\n{self.output(pod, container)[-2000:]}"
