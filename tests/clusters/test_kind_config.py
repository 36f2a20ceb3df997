"""Unit tests of the `--cluster kind` pieces that need no cluster: the kind config, the pod-network manifest,
the `[kind]` pins and the host clean-up's rule selection."""

from __future__ import annotations

import json

import pytest
import yaml
from conformance_lab.kind import host as kindhost
from conformance_lab.kind import provider as kind
from conformance_lab.toolchain import versions
from conformance_lab.toolchain.kindnode import cni, rootfs


def test_kind_config_sets_gates_runtime_config_cdi_and_workers():
    config, gates, runtime = kind.kind_config("dra-x", "v1.34.4", "all", 2)
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker", "worker"]
    assert config["featureGates"] == gates and gates["DRAAdminAccess"] is True
    assert config["runtimeConfig"]["resource.k8s.io/v1beta1"] == "true" and "resource.k8s.io/v1beta1" in runtime
    assert "enable_cdi = true" in config["containerdConfigPatches"][0]


def test_kind_config_with_default_gates_sets_none():
    config, gates, runtime = kind.kind_config("dra-x", "v1.34.4", "defaults", 1)
    assert (gates, runtime) == ({}, "") and "featureGates" not in config and "runtimeConfig" not in config


def test_unknown_kind_provider_choice_names_the_variable(monkeypatch):
    kind.use_docker.cache_clear()
    monkeypatch.setenv("DRA_CONFORMANCE_KIND_PROVIDER", "podman")
    with pytest.raises(Exception, match="DRA_CONFORMANCE_KIND_PROVIDER"):
        kind.use_docker()
    kind.use_docker.cache_clear()


def test_pod_network_manifest_is_patchable_by_kind():
    text = cni.manifest("registry.k8s.io/kube-proxy:v1.34.4")
    docs = list(yaml.safe_load_all(text))
    assert "would you kindly patch this file" in text
    ds = docs[-1]
    assert ds["kind"] == "DaemonSet" and ds["spec"]["template"]["spec"]["containers"][0]["env"]
    conf = json.loads(cni.conflist_template() % "10.244.1.0/24")
    assert conf["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24"}]]


def test_kind_pins_are_read():
    v = versions.load()
    assert v.kind["nerdctl"].startswith("v2.") and {"coredns", "crictl"} <= set(v.kind_tools)
    assert "runc" in v.kind["node-packages"]


def test_cgroup_patch_runs_after_fix_cgroup():
    assert rootfs.CGROUP_PATCH.strip().endswith("hide_unmounted_cgroup_controllers")


def test_only_our_rules_and_new_cni_chains_are_removed(monkeypatch):
    saved = {
        "nat": [
            ":POSTROUTING ACCEPT",
            ":CNI-abc",
            ":CNI-dra1",
            f'-A POSTROUTING -s 10.4.1.2/32 -m comment --comment "name: kind id: {kindhost.NAMESPACE}-0123" -j CNI-abc',
            '-A POSTROUTING -s 10.88.0.2/32 -m comment --comment "name: dra-c1 id: x" -j CNI-dra1',
        ]
    }
    calls = []
    monkeypatch.setattr(kindhost, "_save", lambda cmd: saved)
    monkeypatch.setattr(kindhost, "_run", lambda argv, **kw: calls.append(argv) or "")
    done = kindhost._clean_chains("iptables-save", {"nat": {"POSTROUTING", "CNI-dra1"}})
    assert ["iptables", "-t", "nat", "-X", "CNI-abc"] in calls
    assert not any("CNI-dra1" in a for call in calls for a in call), calls
    assert len(done) == 2


def test_empty_unreferenced_per_container_chains_left_by_cni_del_are_removed(monkeypatch):
    """nerdctl's CNI DEL removes a container's rules and jump but leaves its chain: a new, empty, unreferenced
    ``CNI-<24 hex>`` chain is removed; a new chain still in use (another cluster's live container) and one that
    existed before the snapshot are kept."""
    empty, live, old = "CNI-" + "a" * 24, "CNI-" + "b" * 24, "CNI-" + "c" * 24
    saved = {
        "nat": [
            ":POSTROUTING ACCEPT",
            f":{empty}",
            f":{live}",
            f":{old}",
            f'-A POSTROUTING -s 10.88.0.2/32 -m comment --comment "name: dra-c1 id: x" -j {live}',
            f"-A {live} -d 10.88.0.0/16 -j ACCEPT",
        ]
    }
    calls = []
    monkeypatch.setattr(kindhost, "_save", lambda cmd: saved)
    monkeypatch.setattr(kindhost, "_run", lambda argv, **kw: calls.append(argv) or "")
    done = kindhost._clean_chains("iptables-save", {"nat": {"POSTROUTING", old}})
    assert calls == [["iptables", "-t", "nat", "-F", empty], ["iptables", "-t", "nat", "-X", empty]], calls
    assert done == [f"iptables -t nat chain {empty}"]


def test_host_snapshot_survives_a_round_trip_through_json(monkeypatch):
    monkeypatch.setattr(kindhost, "_save", lambda cmd: {"nat": [":POSTROUTING ACCEPT", ":CNI-x"]})
    snap = kindhost.HostSnapshot()
    again = kindhost.HostSnapshot(json.loads(json.dumps(snap.to_dict())))
    assert (again.links, again.paths, again.sysctls, again.chains) == (
        snap.links,
        snap.paths,
        snap.sysctls,
        snap.chains,
    )
    assert again.chains["iptables-save"]["nat"] == {"POSTROUTING", "CNI-x"}
