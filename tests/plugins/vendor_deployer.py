"""A vendor's own driver deployer, shipped outside dra-conformance: the seam of conformance/runner/registry.py.

Load it with ``-p tests.plugins.vendor_deployer`` and choose it with ``--driver-deploy vendor-operator``
(``dra-conformance run --driver reference --driver-deploy vendor-operator -- -p tests.plugins.vendor_deployer``).
It stands in for a vendor operator: it "reconciles" the reference driver by running its kubelet plugins as
host processes of a local cluster (the bundled deployment), records each reconcile in its own state
directory, and names itself in the driver handle (run.json ``driver.deploy`` and the handle's
``deploy_mode``). Nothing under conformance/ knows this module.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from conformance.core.errors import ConfigError
from conformance.drivers.base import DeployContext, DeployedDriver
from conformance.drivers.host import HostDeployer

NAME = "vendor-operator"
VERSION = "vendor-operator 0.1"


class VendorOperatorDeployer:
    """``vendor-operator``: the reference driver's plugins as host processes, deployed "by the operator".

    Chosen with ``--driver-deploy vendor-operator`` for a ``bundled`` profile, or by a profile's own
    ``deploy: {mode: vendor-operator, devices: FILE}`` (``profile_keys``: the keys such a profile may give)."""

    profile_keys = frozenset({"devices"})

    def __init__(self, ctx: DeployContext) -> None:
        if ctx.profile.deploy_mode not in ("bundled", NAME):
            raise ConfigError(
                f"{NAME} deploys the bundled reference driver, not profile {ctx.profile.name}",
                source="--driver-deploy",
                fix="use --driver reference",
            )
        self.ctx = ctx
        self.state_dir = ctx.state_root / NAME
        bundled = dataclasses.replace(
            ctx.profile, deploy_mode="bundled", deploy={**ctx.profile.deploy, "mode": "bundled"}
        )
        self.inner = HostDeployer(ctx.cluster, bundled, ctx.k8s, ctx.run_id, state_root=self.state_dir)

    def _named(self, handle: DeployedDriver) -> DeployedDriver:
        return dataclasses.replace(handle, deploy_mode=NAME)

    def deploy(self) -> DeployedDriver:
        """Reconcile: start the plugins, wait for slices, write ``reconciled.json`` in the state directory."""
        handle = self.inner.deploy()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "reconciled.json").write_text(json.dumps({"nodes": sorted(handle.processes)}))
        return self._named(dataclasses.replace(handle, version=f"{VERSION} ({handle.version})"))

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle in an xdist worker (the processes the cluster records)."""
        return self._named(self.inner.attach(state))

    def teardown(self) -> None:
        """Stop the plugins and remove what the deployment created (idempotent)."""
        self.inner.teardown()


def pytest_dra_driver_deployers():
    """Register ``vendor-operator`` (conformance/hookspecs.py)."""
    return {NAME: VendorOperatorDeployer}
