"""Fixtures for reference-driver unit tests: a DeviceState over temp dirs and a fake claim source."""

from __future__ import annotations

import pytest

from reference_driver import DRIVER_NAME
from reference_driver.cdi import CdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.faults import Faults
from reference_driver.inventory import SimulatedInventory, SimulatedSpec
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import NODE, FakeClaimSource


@pytest.fixture
def source() -> FakeClaimSource:
    return FakeClaimSource()


@pytest.fixture
def make_state(tmp_path, source):
    """Factory: DeviceState on tmp dirs (same dirs every call, so a second call is a 'restarted plugin')."""
    inventory = SimulatedInventory(SimulatedSpec(count=4), NODE)

    def make(faults: Faults = Faults(), claim_source=None) -> DeviceState:
        return DeviceState(
            DRIVER_NAME,
            {NODE},
            inventory.snapshot,
            claim_source or source,
            CdiStore(tmp_path / "cdi"),
            Checkpoint(tmp_path / "state" / "checkpoint.json"),
            faults,
        )

    return make
