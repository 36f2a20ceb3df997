"""The downgrade lane without a cluster: ``upgrade_from.downgrade`` (a driver that does not support N -> N-1), the
helm handle's DowngradesDriver ability and its evidence, the report's "not claimed: downgrade", and the reference
driver's fault ``downgrade-forgets-newer-checkpoint`` on a real checkpoint file."""

from __future__ import annotations

import pytest

from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.core.handles import DowngradesDriver
from conformance.drivers import helm_upgrade
from conformance.reporting import scope
from conformance.runner import facts

DEPLOY = {"chart": "c/", "release": "r", "images": ["new"], "values": {"n": 8}}


def _handle(upgrade_from, calls):
    deploy = {**DEPLOY, **({"upgrade_from": upgrade_from} if upgrade_from else {})}
    profile = schema.parse(
        {
            "name": "x",
            "driver": "x.example.com",
            "device_classes": ["x.example.com"],
            "visibility": {"env_regex": "^X="},
            "deploy": {"mode": "helm", **DEPLOY},
        }
    )
    return helm_upgrade.HelmDriver.of(
        profile,
        "helm",
        version="c 2",
        install=calls.append,
        current=DEPLOY,
        previous=helm_upgrade.previous_spec(deploy),
        previous_name="v1",
        downgrade=bool((upgrade_from or {}).get("downgrade", True)),
    )


def test_the_downgrade_is_the_previous_version_installed_over_the_deployed_one():
    calls: list = []
    driver = _handle({"name": "v1", "chart": "old/"}, calls)
    assert isinstance(driver, DowngradesDriver)
    assert facts.disruptions(None, driver)["driver_downgrade"] == (True, "helm upgrade of the release from c 2 to v1")
    driver.install_previous()  # the downgrade
    driver.upgrade_driver()  # the fixture's teardown puts N back
    assert [c["chart"] for c in calls] == ["old/", "c/"]


def test_a_declared_unsupported_downgrade_is_not_available_and_says_so():
    calls: list = []
    driver = _handle({"name": "v1", "chart": "old/", "downgrade": False}, calls)
    able, why = facts.disruptions(None, driver)["driver_downgrade"]
    assert not able and "does not support downgrade from c 2 to v1" in why and "upgrade_from.downgrade" in why
    assert facts.disruptions(None, driver)["driver_upgrade"][0]  # the upgrade lane still runs
    caps = [{"name": "driver_downgrade", "declared": False, "available": False, "evidence": why}]
    assert scope.not_claimed(caps) == ["downgrade"]


def test_no_previous_version_means_no_downgrade_and_no_claim_about_it():
    driver = _handle(None, [])
    able, why = facts.disruptions(None, driver)["driver_downgrade"]
    assert not able and "upgrade_from" in why
    assert "cannot downgrade" in facts.disruptions(None, None)["driver_downgrade"][1]
    caps = [{"name": "driver_downgrade", "declared": False, "available": False, "evidence": "deployer (host) cannot"}]
    assert scope.not_claimed(caps) == []  # a deployer that cannot is not the profile's claim


def test_a_downgrade_value_that_is_not_a_boolean_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match="downgrade must be true or false") as info:
        helm_upgrade.previous_spec({**DEPLOY, "upgrade_from": {"name": "v1", "downgrade": "no"}})
    assert "upgrade_from" in str(info.value)
    spec = helm_upgrade.previous_spec({**DEPLOY, "upgrade_from": {"name": "v1", "downgrade": False}})
    assert "downgrade" not in spec and "upgrade_from" not in spec
