"""The rolling update with surge (conformance/drivers/surge.py): a profile's ``rolling_update`` is refused at load
time unless it is ``surge``; the DaemonSet handle offers the update only where the profile declares it, and the
run's facts say why not otherwise. Source: apps/v1 DaemonSet maxSurge; kubelet pluginwatcher "Seamless
Upgrade"; issue 24 §3."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.core.errors import ConfigError
from conformance.drivers import profiles, surge
from conformance.drivers.base import DeployedDriver
from conformance.drivers.daemonset_plugin import DaemonSetDriver
from conformance.runner.facts import disruptions

BASE = {
    "name": "surging",
    "driver": "gpu.example.com",
    "device_classes": ["gpu.example.com"],
    "visibility": {"env_regex": "^GPU="},
}


def _profile(tmp_path: Path, **deploy):
    (tmp_path / "c").mkdir(exist_ok=True)
    path = tmp_path / "surging.yaml"
    path.write_text(yaml.safe_dump({**BASE, "deploy": {"mode": "helm", "chart": "c/", "release": "r", **deploy}}))
    return profiles.load(str(path))


def test_declared_is_true_only_for_surge():
    """``rolling_update: surge`` declares it, a missing key does not, anything else is refused naming the field."""
    assert surge.declared({"rolling_update": "surge"}) and not surge.declared({})
    with pytest.raises(ConfigError, match="rolling_update must be 'surge'") as exc:
        surge.declared({"rolling_update": "maxSurge"}, field="deploy.rolling_update", source="p.yaml")
    assert "deploy.rolling_update" in str(exc.value) and "p.yaml" in str(exc.value)


def test_a_bad_rolling_update_is_refused_when_the_profile_loads(tmp_path):
    """The profile loader refuses ``rolling_update: yes`` before any cluster starts."""
    with pytest.raises(ConfigError, match="deploy.rolling_update"):
        _profile(tmp_path, rolling_update="yes")


@pytest.mark.parametrize("declares, able", [(True, True), (False, False)])
def test_the_daemonset_handle_offers_the_surge_update_only_when_declared(tmp_path, declares, able):
    """A DaemonSet handle with a client is able exactly when its profile declares surge; the facts carry it."""
    profile = _profile(tmp_path, **({"rolling_update": "surge"} if declares else {}))
    handle = DaemonSetDriver.of(profile, "helm", k8s=object(), daemonset_namespaces=("ns",))
    got, evidence = disruptions(None, handle)["driver_surge_update"]
    assert got is able and (("maxSurge 1" in evidence) if able else ("rolling_update: surge" in evidence))


def test_a_handle_without_daemonsets_cannot_surge(tmp_path):
    """A handle that runs no plugin DaemonSet (host, bundled, preinstalled) is not able, with the reason."""
    handle = DeployedDriver.of(_profile(tmp_path, rolling_update="surge"), "preinstalled")
    able, evidence = disruptions(None, handle)["driver_surge_update"]
    assert not able and "runs no plugin DaemonSet" in evidence
