"""Preinstalled driver: install nothing (KEP-5970: "the suite installs nothing"); require the profile's
DeviceClasses and the driver's slices to exist."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.core import timeouts
from conformance.core.profile import DriverProfile
from conformance.drivers.base import DeployContext, DeployedDriver
from conformance.drivers.readiness import await_slices, check_device_classes
from conformance.k8s.client import K8s


class PreinstalledDeployer:
    """Checks a driver someone else installed."""

    def __init__(self, profile: DriverProfile, k8s: K8s, ready_timeout: float = timeouts.SLICES_PUBLISHED) -> None:
        self.profile, self.k8s, self.ready_timeout = profile, k8s, ready_timeout

    @classmethod
    def from_context(cls, ctx: DeployContext) -> PreinstalledDeployer:
        """The registry factory of ``preinstalled`` (any profile: nothing is installed)."""
        return cls(ctx.profile, ctx.k8s)

    def deploy(self) -> DeployedDriver:
        """Raise DriverNotReady when a DeviceClass is missing or no slice is published."""
        check_device_classes(self.k8s, self.profile)
        await_slices(self.k8s, self.profile, timeout=self.ready_timeout)
        return self.attach({})

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle (also in xdist workers)."""
        return DeployedDriver.of(self.profile, "preinstalled", version=str(state.get("version", "")))

    def teardown(self) -> None:
        """Nothing to remove."""
