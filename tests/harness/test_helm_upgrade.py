"""The helm deployer's upgrade lane without a cluster: the previous version's deploy spec from
``upgrade_from``, the handle's UpgradesDriver ability and its evidence, and the Go build's checksum-database
exclusion for a module the database does not know."""

from __future__ import annotations

import types

import pytest
from conformance_lab.toolchain import gobuild, versions

from conformance.core import profile as schema
from conformance.core.errors import ConfigError, DriverNotReady
from conformance.core.handles import UpgradesDriver
from conformance.drivers import helm_upgrade
from conformance.drivers.profiles import load as load_profile
from conformance.runner import facts

DEPLOY = {
    "chart": "c/",
    "release": "r",
    "images": ["new"],
    "values": {"image": {"pullPolicy": "IfNotPresent", "tag": "v2"}, "n": 8},
}


def test_previous_spec_replaces_chart_and_images_and_merges_values():
    spec = helm_upgrade.previous_spec(
        {
            **DEPLOY,
            "upgrade_from": {"name": "v1", "chart": "old/", "images": ["old"], "values": {"image": {"tag": "v1"}}},
        }
    )
    assert spec == {
        "chart": "old/",
        "release": "r",
        "images": ["old"],
        "values": {"image": {"pullPolicy": "IfNotPresent", "tag": "v1"}, "n": 8},
    }
    assert helm_upgrade.previous_spec(DEPLOY) is None


@pytest.mark.parametrize(
    "raw, match", [("v1", "mapping with a name"), ({"chart": "c"}, "name"), ({"name": "v1", "dir": "x"}, "unknown")]
)
def test_bad_upgrade_from_is_refused_with_the_field(raw, match):
    with pytest.raises(ConfigError, match=match) as info:
        helm_upgrade.previous_spec({**DEPLOY, "upgrade_from": raw})
    assert "upgrade_from" in str(info.value)


def _handle(previous, calls):
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
        profile, "helm", version="c 2", install=calls.append, current=DEPLOY, previous=previous, previous_name="v1"
    )


def test_handle_installs_the_previous_version_then_upgrades_once():
    calls: list = []
    driver = _handle({"chart": "old/"}, calls)
    assert isinstance(driver, UpgradesDriver)
    assert facts.disruptions(None, driver)["driver_upgrade"] == (True, "helm upgrade of the release from v1 to c 2")
    driver.upgrade_driver()  # nothing installed yet: nothing to do
    driver.install_previous()
    driver.upgrade_driver()
    driver.upgrade_driver()  # idempotent (the fixture's teardown)
    assert calls == [{"chart": "old/"}, DEPLOY]


def test_no_previous_version_is_not_upgradable_with_evidence():
    calls: list = []
    driver = _handle(None, calls)
    able, why = facts.disruptions(None, driver)["driver_upgrade"]
    assert not able and "names no previous version" in why and "upgrade_from" in why
    with pytest.raises(RuntimeError, match="upgrade_from"):
        driver.install_previous()
    assert calls == []
    assert "cannot upgrade" in facts.disruptions(None, None)["driver_upgrade"][1]


def test_shipped_profiles_name_their_previous_versions():
    for name in ("reference", "dra-example-driver"):
        deploy = load_profile(name).for_mode("helm").deploy
        assert helm_upgrade.previous_spec(deploy)["chart"], name


def test_nosumdb_is_scoped_to_the_tool_that_needs_it():
    tools = versions.load().go_tools
    previous = tools["dra-example-driver-previous"]
    assert previous.nosumdb and previous.version == "v0.3.0"
    assert gobuild.module_env(previous) == {"GONOSUMDB": "sigs.k8s.io/dra-example-driver"}
    assert gobuild.module_env(tools["dra-example-driver"]) == {}
    assert "GONOSUMDB" not in gobuild.go_env() or gobuild.go_env()["GONOSUMDB"] != previous.module


class _Lister:
    def list(self, kind, namespace):
        assert (kind, namespace) == ("DaemonSet", "ns")
        return [types.SimpleNamespace(name="plugin")]


def test_rollout_waits_for_every_daemonset_and_the_registrations_held_before(monkeypatch):
    """The DaemonSets of the namespace are awaited; a node counts once it holds every socket it held before
    the upgrade again; a node whose metrics were unreadable is not awaited."""
    seen, answers = [], iter([{"a": set(), "b": {"s.sock"}}, {"a": {"s.sock"}, "b": {"s.sock"}}])
    monkeypatch.setattr(helm_upgrade, "await_daemonsets", lambda k8s, d, refs, timeout: seen.extend(refs))
    monkeypatch.setattr(helm_upgrade, "registered_sockets", lambda k8s, nodes: next(answers))
    before = {"a": {"s.sock"}, "b": {"s.sock"}, "c": None}
    helm_upgrade.await_rollout(_Lister(), "d", "ns", before, timeout=5)
    assert seen == [("ns", "plugin")]


def test_rollout_names_the_nodes_whose_plugin_never_registers_again(monkeypatch):
    monkeypatch.setattr(helm_upgrade, "await_daemonsets", lambda *a, **k: None)
    monkeypatch.setattr(helm_upgrade, "registered_sockets", lambda k8s, nodes: {"a": set()})
    with pytest.raises(DriverNotReady, match=r"registrations again on the kubelets of \['a'\]") as info:
        helm_upgrade.await_rollout(_Lister(), "d", "ns", {"a": {"s.sock"}}, timeout=0.2, logs=lambda: {"p": "boom"})
    assert "boom" in str(info.value)


def test_previous_example_driver_image_is_named_by_its_own_chart():
    """The v0.3.0 image goes under the name its chart runs: same repository as v0.4.0, tag = its appVersion."""
    from conformance_lab.toolchain.images import example_driver
    from conformance_lab.toolchain.images.oci import ImageError

    try:
        old, new = example_driver.ref(example_driver.PREVIOUS), example_driver.ref()
    except ImageError as exc:
        pytest.skip(f"module not in the Go module cache: {exc}")
    assert old.endswith(":v0.3.0") and new.endswith(":v0.4.0")
    assert old.rsplit(":", 1)[0] == new.rsplit(":", 1)[0]


@pytest.mark.parametrize(
    "before, now, again",
    [
        ({"d-reg.sock"}, {"d-reg.sock"}, True),  # same path registered again
        ({"d-uid1-reg.sock"}, {"d-uid2-reg.sock"}, True),  # per-instance sockets (kubeletplugin rolling update)
        ({"d-reg.sock"}, set(), False),
        (set(), set(), False),
        ({"d-reg.sock", "other.sock"}, {"other.sock"}, False),
    ],
)
def test_registered_again_accepts_reused_and_per_instance_sockets(before, now, again):
    assert helm_upgrade._registered_again(before, now) is again
