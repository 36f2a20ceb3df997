"""The runtime health switch of a driver profile (``health_switch.node_annotation``): the harness sets a Node
annotation whose comma-separated device names the driver then reports Unhealthy in its DRAResourceHealth stream,
and removes it to turn them Healthy again. The reference driver reads ``<driver>/unhealthy``
(reference_driver/kube.py unhealthy_switch). The key carries the driver name, so drivers of other runs on a
shared cluster never read it. Source: KEP-4680 (device health in pod status); upstream test/e2e_node/dra_test.go
ResourceHealthStatus (a test driver turns a device unhealthy at run time).
"""

from __future__ import annotations


class HealthSwitch:
    """Turns devices of a node Unhealthy / Healthy through the annotation ``key`` (``{driver}`` filled in).
    :meth:`restore` removes the annotation from every node it touched (the fixture's teardown). ``k8s``: the
    harness's :class:`conformance.k8s.client.K8s` (its ``patch``)."""

    def __init__(self, k8s, key: str) -> None:
        self.k8s, self.key = k8s, key
        self._touched: set[str] = set()

    def turn_unhealthy(self, node: str, devices: list[str]) -> None:
        """Ask the driver to report ``devices`` of ``node`` Unhealthy. Raises ApiError (e.g. Forbidden: the
        run's user may not patch Nodes)."""
        self._touched.add(node)
        self.k8s.patch("Node", node, {"metadata": {"annotations": {self.key: ",".join(devices)}}})

    def turn_healthy(self, node: str) -> None:
        """Ask the driver to report every device of ``node`` Healthy again (the annotation removed)."""
        self.k8s.patch("Node", node, {"metadata": {"annotations": {self.key: None}}})

    def restore(self) -> None:
        """Remove the annotation from every node :meth:`turn_unhealthy` touched."""
        for node in sorted(self._touched):
            self.turn_healthy(node)
