"""The manifests deployer's bundle (read, rendered, namespace added, apply order), the chart values a run takes
from its environment (a fault reaching the reference chart's container env), the DaemonSet readiness rule and
the profile keys of ``manifests`` (no cluster; rendering needs the cached helm binary)."""

from __future__ import annotations

import pytest
import yaml
from conformance_lab.toolchain import cache

from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.core.objects import Obj
from conformance.drivers import bundle, chartvalues, helm, profiles, readiness
from conformance.drivers.base import DeployContext
from conformance.drivers.manifests import ManifestsDeployer

BASE = {
    "name": "x",
    "driver": "x.example.com",
    "device_classes": ["x.example.com"],
    "visibility": {"env_regex": "^X="},
}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}


def _helm():
    try:
        return cache.tool_binary("helm")
    except cache.CacheMiss as err:
        pytest.skip(f"helm binary not built yet: {err}")


def test_env_values_set_only_variables_that_are_set_and_not_empty():
    mapping = {"DRA_REFERENCE_FAULTS": "faults", "IMG": "image.tag", "UNSET": "x"}
    got = chartvalues.from_env(mapping, {"DRA_REFERENCE_FAULTS": "a,b", "IMG": "v2", "UNSET": ""})
    assert got == {"faults": "a,b", "image": {"tag": "v2"}}
    assert chartvalues.from_env(None, {"A": "1"}) == {}


@pytest.mark.parametrize("bad", [["faults"], {"A": ""}, {"A": "a..b"}, {"A": 3}])
def test_env_values_that_are_not_variable_to_path_mappings_are_refused(bad):
    with pytest.raises(ConfigError, match="env_values"):
        chartvalues.from_env(bad, {})


def test_chart_values_merge_profile_values_environment_and_image_repo():
    deploy = {"values": {"image": {"tag": "dev"}, "faults": ""}, "env_values": {"F": "faults"}}
    got = chartvalues.chart_values(deploy, {"F": "no-slices"}, image_repo="reg.example/drv")
    assert got == {"image": {"tag": "dev", "repository": "reg.example/drv"}, "faults": "no-slices"}
    assert deploy["values"] == {"image": {"tag": "dev"}, "faults": ""}  # the profile is not changed


def test_node_name_placeholder_is_the_one_nodes_name_and_refused_on_more_nodes():
    """A chart that only takes a fixed node name (dra-driver-cpu's ``args.hostnameOverride``, cmd/dracpu/app.go
    ``nodeutil.GetHostname``) can be given ``{node_name}``, which only one node defines."""
    deploy = {"values": {"args": {"cpuDeviceMode": "individual", "hostnameOverride": chartvalues.NODE_NAME}}}
    got = chartvalues.chart_values(deploy, {}, node_names=["dra-1-n1"])
    assert got["args"] == {"cpuDeviceMode": "individual", "hostnameOverride": "dra-1-n1"}
    assert chartvalues.fill_node_name({"a": ["x-{node_name}", 3]}, ["n"]) == {"a": ["x-n", 3]}
    assert chartvalues.chart_values({"values": {"a": "plain"}}, {}, node_names=["n1", "n2"]) == {"a": "plain"}
    with pytest.raises(ConfigError, match=r"deploy\.values\.args\.hostnameOverride.*2 nodes \(n1, n2\).*--nodes 1"):
        chartvalues.chart_values(deploy, {}, node_names=["n1", "n2"])


def test_dra_driver_cpu_names_its_node_by_the_hostname_on_any_node_count():
    """Local nodes have their own UTS namespace (hostname = node name), so dra-driver-cpu's profile sets no
    ``hostnameOverride`` (the chart then passes no ``--hostname-override``: deployment/helm/dra-driver-cpu/
    templates/daemonset.yaml) and its values are the same on two nodes as on one."""
    deploy = profiles.load("dra-driver-cpu").deploy
    one = chartvalues.chart_values(deploy, {}, node_names=["n1"])
    assert one["args"] == {"cpuDeviceMode": "individual"}
    assert chartvalues.chart_values(deploy, {}, node_names=["n1", "n2"]) == one


@pytest.mark.parametrize("mode", ["helm", "manifests"])
def test_a_runs_faults_reach_the_reference_daemonsets_container_env(mode, tmp_path):
    """DRA_REFERENCE_FAULTS of the run -> the profile's env_values -> chart value ``faults`` -> the plugin
    container's DRA_REFERENCE_FAULTS (reference_driver/config.py reads it), for both chart-based modes."""
    deploy = profiles.load("reference").for_mode(mode).deploy
    values = chartvalues.chart_values(deploy, {"DRA_REFERENCE_FAULTS": "skip-cdi-env,no-slices"})
    chart = helm.resolve_chart(deploy["chart"])
    rendered = bundle.render(_helm(), chart, "r", "ns", bundle.values_file(values, tmp_path))
    (ds,) = rendered.of_kind("DaemonSet")
    env = {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DRA_REFERENCE_FAULTS"] == "skip-cdi-env,no-slices", env
    healthy = bundle.render(
        _helm(), chart, "r", "ns", bundle.values_file(chartvalues.chart_values(deploy, {}), tmp_path)
    )
    (ds,) = healthy.of_kind("DaemonSet")
    assert {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}[
        "DRA_REFERENCE_FAULTS"
    ] == ""


def test_bundle_reads_a_directory_in_name_order_and_flattens_lists(tmp_path):
    (tmp_path / "b.yaml").write_text(yaml.safe_dump_all([CM, None]))
    (tmp_path / "a.yml").write_text(yaml.safe_dump({"kind": "List", "items": [{**CM, "metadata": {"name": "d"}}]}))
    (tmp_path / "notes.txt").write_text("not a manifest")
    got = bundle.read(tmp_path)
    assert got.refs() == ["ConfigMap d", "ConfigMap n/c"]
    assert bundle.read(tmp_path / "b.yaml").refs() == ["ConfigMap n/c"]


@pytest.mark.parametrize(
    ("files", "match"),
    [({}, "no manifests"), ({"x.yaml": "a: [b"}, "not valid YAML"), ({"x.yaml": "kind: ConfigMap\n"}, "metadata.name")],
)
def test_bundles_without_objects_are_refused_with_the_path(tmp_path, files, match):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=match):
        bundle.read(tmp_path)


def test_namespace_is_added_once_and_applied_first():
    got = bundle.Bundle((CM,), "src").with_namespace("n")
    assert got.refs() == ["Namespace n", "ConfigMap n/c"]
    assert got.with_namespace("n") is got
    kinds = [d["kind"] for d in yaml.safe_load_all(bundle.Bundle((CM, *got.documents[:1]), "s").text())]
    assert kinds == ["Namespace", "ConfigMap"]


def test_daemonset_ready_needs_every_scheduled_pod_updated_and_ready():
    def ds(**status):
        return Obj({"kind": "DaemonSet", "metadata": {"name": "d", "generation": 2}, "status": status})

    full = {"observedGeneration": 2, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberReady": 2}
    assert readiness.daemonset_ready(ds(**full))
    assert not readiness.daemonset_ready(ds(**{**full, "numberReady": 1}))
    assert not readiness.daemonset_ready(ds(**{**full, "observedGeneration": 1}))
    assert not readiness.daemonset_ready(ds(**{**full, "desiredNumberScheduled": 0, "updatedNumberScheduled": 0}))


def test_manifests_profile_needs_a_directory_or_a_chart_not_both():
    with pytest.raises(ConfigError, match="directory or file of manifests"):
        schema.parse({**BASE, "deploy": {"mode": "manifests"}})
    with pytest.raises(ConfigError, match="not both"):
        schema.parse({**BASE, "deploy": {"mode": "manifests", "dir": "d", "chart": "c"}})
    p = schema.parse({**BASE, "deploy": {"mode": "manifests", "chart": "c", "env_values": {"A": "a"}, "images": []}})
    assert p.deploy["chart"] == "c"


def test_manifests_deployer_refuses_a_profile_without_manifests(tmp_path):
    p = schema.parse({**BASE, "deploy": {"mode": "preinstalled"}})
    ctx = DeployContext(mode="manifests", cluster=None, profile=p, k8s=None, run_id="r", state_root=tmp_path)
    with pytest.raises(ConfigError, match="has no manifests"):
        ManifestsDeployer.from_context(ctx)


def test_a_reentered_command_uses_the_new_namespace_holder():
    from conformance_lab.local import node_mounts

    argv = node_mounts.enter(111, ["kubelet", "--v=2"])
    assert node_mounts.reenter(argv, 222) == ["nsenter", "--mount=/proc/222/ns/mnt", "--", "kubelet", "--v=2"]
    assert node_mounts.reenter(["kubelet"], 222) == ["kubelet"]


def _deployer(tmp_path, monkeypatch, survivors: str):
    """A deployer whose bundle was applied; kubectl answers ``survivors`` to the get after the delete."""
    from conformance.drivers import manifests  # noqa: PLC0415

    p = schema.parse({**BASE, "deploy": {"mode": "manifests", "dir": "d"}})
    d = manifests.ManifestsDeployer(None, p, None, tmp_path)
    d.applied = bundle.Bundle((CM,), "src")
    calls = []
    monkeypatch.setattr(d, "_kubectl", lambda *a, **k: calls.append(a[0]) or (survivors if a[0] == "get" else ""))
    monkeypatch.setattr(manifests, "delete_slices", lambda k8s, driver: calls.append(f"slices of {driver}"))
    return d, calls


def test_teardown_deletes_the_applied_bundle_and_its_slices_and_names_survivors(tmp_path, monkeypatch):
    from conformance.core.errors import LeakError  # noqa: PLC0415

    d, calls = _deployer(tmp_path, monkeypatch, survivors="configmap/c\n")
    with pytest.raises(LeakError, match="configmap/c"):
        d.teardown()
    assert calls == ["delete", "slices of x.example.com", "get"]
    d.teardown()  # idempotent: nothing applied any more
    assert len(calls) == 3
    clean, calls = _deployer(tmp_path, monkeypatch, survivors="")
    clean.teardown()
    assert calls == ["delete", "slices of x.example.com", "get"]
