"""The dranet profile's pieces without a cluster: deploy.nri / deploy.netdevs validation, the interface filter
the host deployer templates per node ({netdevs_cel}, {kubelet_root_dir}), NRI plugins started through the
cluster's RunsNriPlugins, test interfaces removed at tear-down, and a probe that names devices by an attribute
(dra.net/ifName) instead of their device names."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.core.objects import Obj
from conformance.core.profile import Visibility
from conformance.dra.inventory import Device
from conformance.drivers import profiles
from conformance.drivers.host import HostDeployer, cel_string_list
from conformance.node.probe import Probe

HOST = {"mode": "host", "binary": {"tool": "dranet", "name": "dranet"}}
BASE = {"name": "x", "driver": "dra.net", "device_classes": ["dra.net"], "visibility": {"expected_output": "^dn"}}


def test_dranet_profile_publishes_only_its_test_interfaces_and_never_probes_clouds():
    prof = profiles.load("dranet")
    args = prof.deploy["args"]
    assert prof.driver == "dra.net" and prof.device_class == "dra.net"
    assert prof.deploy["nri"] is True and prof.deploy["netdevs"] == {"kind": "ifb", "count": 4}
    assert "--cloud-provider-hint=NONE" in args and "--profile-provider=none" in args
    assert "{netdevs_cel}" in args[args.index("--filter") + 1]
    assert prof.visibility.device_attribute == "ifName" and prof.qualified("ifName") == "dra.net/ifName"
    assert not prof.declares("shared_claims") and not prof.declares("opaque_config")


@pytest.mark.parametrize(
    "deploy, field",
    [
        ({"nri": "yes"}, "deploy.nri"),
        ({"netdevs": {"kind": "dummy", "count": 2}}, "deploy.netdevs.kind"),
        ({"netdevs": {"kind": "ifb", "count": 0}}, "deploy.netdevs.count"),
        ({"netdevs": {"kind": "ifb"}}, "deploy.netdevs.count"),
        ({"netdevs": {"kind": "ifb", "count": 2, "prefix": "x"}}, "deploy.netdevs"),
        ({"netdevs": 4}, "deploy.netdevs"),
    ],
)
def test_bad_nri_or_netdevs_names_the_field(deploy, field):
    with pytest.raises(ConfigError) as exc:
        schema.parse({**BASE, "deploy": {**HOST, **deploy}}, source="p.yaml")
    assert exc.value.field == field and exc.value.source == "p.yaml" and exc.value.fix


def test_netdevs_belong_to_host_mode_only():
    with pytest.raises(ConfigError, match="key of deploy mode host"):
        schema.parse({**BASE, "deploy": {"mode": "helm", "chart": "c", "netdevs": {"count": 1}}})


def test_cel_string_list_quotes_and_escapes():
    assert cel_string_list([]) == "[]"
    assert cel_string_list(["dnabcdef-0", 'we"ird\\']) == '["dnabcdef-0", "we\\"ird\\\\"]'


@dataclasses.dataclass
class _Node:
    name: str
    kubelet_root_dir: Path
    plugin_registry_dir: Path
    plugins_dir: Path
    cdi_dir: Path


class _Cluster:
    """A cluster with host processes, test interfaces and NRI plugins: records what it was asked."""

    def __init__(self, tmp_path: Path) -> None:
        root = tmp_path / "n0" / "kubelet"
        self.nodes = [_Node("n0", root, root / "plugins_registry", root / "plugins", tmp_path / "cdi")]
        self.kubeconfig, self.k8s_version, self.calls = tmp_path / "kc", "v1.34.4", []

    def start_host_process(self, node, name, argv, env=None):
        self.calls.append(("host", node, argv))
        return SimpleNamespace(is_running=lambda: True, stop=lambda timeout: None, log_path="log")

    def host_processes(self):
        return []

    def start_nri_plugin(self, node, name, argv, env=None):
        self.calls.append(("nri", node, argv))
        return SimpleNamespace(is_running=lambda: True, stop=lambda timeout: None, log_path="log")

    def add_test_netdevs(self, node, kind, count):
        self.calls.append(("add", node, kind, count))
        return [f"dn000000-{k}" for k in range(count)]

    def remove_test_netdevs(self, node):
        self.calls.append(("remove", node))
        return []


def test_host_deployer_makes_interfaces_then_starts_an_nri_plugin_with_the_nodes_filter(tmp_path, monkeypatch):
    prof = profiles.load("dranet")
    cluster = _Cluster(tmp_path)
    monkeypatch.setattr("conformance.toolbox.program", lambda name, tool=None, k8s_version=None: Path(f"/cache/{name}"))
    deployer = HostDeployer(cluster, prof, None, "r", state_root=tmp_path / "state")
    monkeypatch.setattr(deployer, "_device_classes", lambda: [])
    monkeypatch.setattr("conformance.drivers.host.check_device_classes", lambda k8s, p: None)
    monkeypatch.setattr("conformance.drivers.host.await_slices", lambda *a, **kw: None)
    monkeypatch.setattr("conformance.drivers.host.delete_slices", lambda k8s, d: None)
    monkeypatch.setattr("conformance.drivers.host.delete_device_classes", lambda k8s, c: None)
    deployer.deploy()
    assert cluster.calls[0] == ("add", "n0", "ifb", 4)
    kind, node, argv = cluster.calls[1]
    assert (kind, node, argv[0]) == ("nri", "n0", "/cache/dranet")
    names = '["dn000000-0", "dn000000-1", "dn000000-2", "dn000000-3"]'
    want = f'"dra.net/ifName" in attributes && attributes["dra.net/ifName"].StringValue in {names}'
    assert argv[argv.index("--filter") + 1] == want
    assert argv[argv.index("--kubelet-root-dir") + 1] == str(tmp_path / "n0" / "kubelet")
    deployer.teardown()
    assert cluster.calls[-1] == ("remove", "n0") and deployer.netdevs == {}


def test_host_deployer_refuses_nri_on_a_cluster_without_it(tmp_path, monkeypatch):
    class Plain(_Cluster):
        start_nri_plugin = None  # not the RunsNriPlugins ability

    prof = profiles.load("dranet")
    with pytest.raises(ConfigError) as exc:
        HostDeployer(Plain(tmp_path), prof, None, "r", state_root=tmp_path).deploy()
    assert exc.value.field == "deploy.nri" and "RunsNriPlugins" in str(exc.value)


def _ended(*lines: str) -> str:
    return "".join(line + "\n" for line in lines) + "\nDRA_CONFORMANCE_PROBE_END rc=0\n"


def _device(name: str, ifname: str, node: str = "n1") -> Device:
    return Device(node, node, name, {"dra.net/ifName": ifname}, {})


def test_probe_names_devices_by_their_interface_name_attribute():
    """dranet device ``net-xyz`` (a normalised name) is interface ``eth9`` inside the pod: the probe judges
    by dra.net/ifName, and another node's interface or a device's own name is not the claimed one."""
    inventory = SimpleNamespace(
        driver="dra.net",
        on_node=lambda node: [_device("net-xyz", "eth9"), _device("dn1-0", "dn1-0")],
        names_on=lambda node: ["net-xyz", "dn1-0"],
    )
    prof = SimpleNamespace(
        visibility=Visibility(
            command="ls -1 /sys/class/net", expected_output=r"^(eth[5-9]|dn\S+)$", device_attribute="ifName"
        ),
        qualified=lambda a: f"dra.net/{a}",
    )
    pod = Obj({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})
    k8s = SimpleNamespace(logs=lambda pod, container=None, retry=True: _ended("eth0", "eth9", "lo"))
    claim = Obj(
        {
            "status": {
                "allocation": {
                    "devices": {"results": [{"driver": "dra.net", "pool": "n1", "device": "net-xyz", "request": "r"}]}
                }
            }
        }
    )
    shown = Probe(k8s, prof, None, inventory).shows_allocation(pod, claim, inventory)
    assert shown and "net-xyz=eth9" in shown.evidence, shown.evidence
    other = Obj(
        {
            "status": {
                "allocation": {
                    "devices": {"results": [{"driver": "dra.net", "pool": "n1", "device": "dn1-0", "request": "r"}]}
                }
            }
        }
    )
    assert not Probe(k8s, prof, None, inventory).shows_allocation(pod, other, inventory)
    with pytest.raises(ValueError, match="inventory"):
        Probe(k8s, prof, None, None).shows_devices(pod, ["net-xyz"], ["net-xyz"])


def test_cdi_capability_is_on_unless_the_profile_says_false():
    """Tests that read CDI specs skip for dranet (it writes none) with the profile as evidence; every other
    profile keeps them (cdi defaults to true)."""
    from conformance.core.capabilities import evaluate  # noqa: PLC0415

    dranet = evaluate({}, profiles.load("dranet"))
    reference = evaluate({}, profiles.load("reference"))
    assert not dranet.has("driver.cdi") and "cdi: false" in dranet.evidence("driver.cdi")
    assert "dranet" in dranet.evidence("driver.cdi") and reference.has("driver.cdi")
    assert not dranet.has("driver.container_isolation") and "netns" in dranet.evidence("driver.container_isolation")
    assert reference.has("driver.container_isolation")
