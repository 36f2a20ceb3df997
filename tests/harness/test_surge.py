"""The rolling update with surge (conformance/drivers/surge.py): a profile's ``rolling_update`` is refused at load
time unless it is ``surge``; the DaemonSet handle offers the update only where the profile declares it, and the
run's facts say why not otherwise. Source: apps/v1 DaemonSet maxSurge; kubelet pluginwatcher "Seamless
Upgrade"; issue 24 §3."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.core import timeouts
from conformance.core.errors import ConfigError, DriverNotReady
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


class _Cluster:
    """A fake K8s client for :func:`surge.roll`: DaemonSets in namespace ``ns``, one plugin pod per node each.
    A patch rolls the DaemonSet (new pod UIDs, Ready) unless ``stuck`` names it (its old pods stay)."""

    def __init__(self, daemonsets: dict[str, list[str]], registry: str = "/var/lib/kubelet/plugins_registry"):
        self.stuck: set[str] = set()
        self.patched: list[tuple[str, dict]] = []
        self.ds = {n: _daemonset(n, registry) for n in daemonsets}
        self.pods = {n: [_pod(n, node, f"{n}-{node}-0") for node in nodes] for n, nodes in daemonsets.items()}

    def unguarded(self):
        return self

    def list(self, kind: str, ns: str):
        from conformance.core.objects import Obj  # noqa: PLC0415

        if kind == "DaemonSet":
            return [Obj(d) for d in self.ds.values()]
        return [Obj(p) for pods in self.pods.values() for p in pods]

    def patch(self, kind: str, name: str, body: dict, ns: str):
        self.patched.append((name, body))
        if "template" in body["spec"] and name not in self.stuck:
            self.pods[name] = [
                _pod(name, p["spec"]["nodeName"], p["metadata"]["uid"] + "-new") for p in self.pods[name]
            ]


def _daemonset(name: str, registry: str) -> dict:
    volumes = [{"name": "reg", "hostPath": {"path": registry}}]
    return {
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": {"volumes": volumes}}},
    }


def _pod(ds: str, node: str, uid: str) -> dict:
    return {
        "kind": "Pod",
        "metadata": {
            "name": uid,
            "namespace": "ns",
            "uid": uid,
            "ownerReferences": [{"kind": "DaemonSet", "name": ds}],
        },
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_a_roll_replaces_the_plugin_pod_on_the_tests_node():
    """Each plugin DaemonSet is patched with surge, its old strategy saved; the test's node runs a new pod."""
    cluster, saved = _Cluster({"plugin": ["n1", "n2"]}), {}
    surge.roll(cluster, "gpu.example.com", ["ns"], 5, saved, "n1")
    assert saved == {"ns/plugin": {"type": "OnDelete"}} and [n for n, _ in cluster.patched] == ["plugin"]
    assert {p["metadata"]["uid"] for p in cluster.pods["plugin"]} == {"plugin-n1-0-new", "plugin-n2-0-new"}


def test_nothing_rolled_fails_naming_what_was_looked_for():
    """A chart whose DaemonSet mounts /var/lib/kubelet whole matches no plugin DaemonSet: the roll fails
    (was: returned nothing and the test passed with no rollout)."""
    cluster = _Cluster({"plugin": ["n1"]}, registry="/var/lib/kubelet")
    with pytest.raises(DriverNotReady, match="gpu.example.com.*plugins_registry.*nothing was rolled"):
        surge.roll(cluster, "gpu.example.com", ["ns"], 5, {}, "n1")
    assert not cluster.patched


def test_a_roll_that_ran_no_plugin_pod_on_the_tests_node_fails():
    """The test's node had no plugin pod of a rolled DaemonSet: nothing there was updated, so the roll fails."""
    with pytest.raises(DriverNotReady, match="on node n9.*none ran there"):
        surge.roll(_Cluster({"plugin": ["n1"]}), "gpu.example.com", ["ns"], 5, {}, "n9")


def test_the_same_pod_after_the_roll_fails_and_a_failed_roll_stays_restorable():
    """A DaemonSet whose pods never change times out naming the node still rolling; the strategies of every
    DaemonSet patched so far were saved before the patch, so :func:`surge.restore` puts them all back."""
    cluster, saved = _Cluster({"a": ["n1"], "b": ["n1"]}), {}
    cluster.stuck = {"b"}
    with pytest.raises(DriverNotReady, match="still rolling.*n1"):
        surge.roll(cluster, "gpu.example.com", ["ns"], 1.5, saved, "n1")
    assert saved == {"ns/a": {"type": "OnDelete"}, "ns/b": {"type": "OnDelete"}}
    cluster.patched.clear()
    surge.restore(cluster, saved)
    assert cluster.patched == [(n, {"spec": {"updateStrategy": {"type": "OnDelete"}}}) for n in ("a", "b")]


def test_the_daemonset_handle_keeps_the_strategies_of_a_failed_roll(tmp_path, monkeypatch):
    """``surge_update`` saves into the handle's strategies before rolling, so teardown restores after a failure."""
    cluster = _Cluster({"plugin": ["n1"]})
    cluster.stuck = {"plugin"}
    handle = DaemonSetDriver.of(
        _profile(tmp_path, rolling_update="surge"), "helm", k8s=cluster, daemonset_namespaces=("ns",)
    )
    monkeypatch.setattr(timeouts, "PLUGIN_REGISTRATION", 0.3)
    with pytest.raises(DriverNotReady):
        handle.surge_update("n1")
    assert handle.strategies == {"ns/plugin": {"type": "OnDelete"}}
