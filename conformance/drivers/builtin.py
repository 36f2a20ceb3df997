"""The deploy modes shipped with dra-conformance, registered the way a vendor registers its own: this module
is a pytest plugin (the harness registers it) implementing ``pytest_dra_driver_deployers``
(conformance/hookspecs.py). It does not import pytest: pluggy finds the hook by its name.

Modes: ``bundled`` (our reference driver as host processes), ``host`` (a third-party kubelet plugin binary as
host processes), ``helm`` (the profile's chart), ``manifests`` (``kubectl apply -f`` of the profile's
directory), ``preinstalled`` (install nothing; require the DeviceClasses and slices).
"""

from __future__ import annotations

from conformance.drivers.base import DriverDeployerFactory
from conformance.drivers.helm import HelmDeployer
from conformance.drivers.host import HostDeployer
from conformance.drivers.manifests import ManifestsDeployer
from conformance.drivers.preinstalled import PreinstalledDeployer


def pytest_dra_driver_deployers() -> dict[str, DriverDeployerFactory]:
    """``{mode name: factory(DeployContext) -> DriverDeployer}`` of the shipped deploy modes."""
    return {
        "bundled": HostDeployer.from_context,
        "host": HostDeployer.from_context,
        "helm": HelmDeployer.from_context,
        "manifests": ManifestsDeployer.from_context,
        "preinstalled": PreinstalledDeployer.from_context,
    }
