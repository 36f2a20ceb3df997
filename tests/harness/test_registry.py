"""Unit tests of the seams: the provider/deployer registry (unknown names, third-party registration, entry
points, duplicates), the optional abilities checked with isinstance, and a Session that takes its cluster
provider and driver deployer from the registry (a third-party deployer from tests/plugins). No cluster."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.clusters import builtin as builtin_clusters
from conformance.clusters.existing import ExistingCluster, ExistingNode
from conformance.core import handles
from conformance.core.capabilities import Capabilities
from conformance.core.config import RunConfig
from conformance.core.errors import ConfigError
from conformance.drivers import builtin as builtin_drivers
from conformance.drivers import profiles
from conformance.drivers.base import DeployedDriver, HostProcessDriver
from conformance.drivers.host import HostDeployer
from conformance.runner import session as session_mod
from conformance.runner.registry import DEPLOYER_GROUP, PROVIDER_GROUP, Registry
from tests.plugins import vendor_deployer

REPO = Path(__file__).resolve().parents[2]


def shipped(lab: bool = True) -> Registry:
    """The plugin's hooks, plus (``lab``) the installed lab's entry points (local, kind) as a run loads them."""
    registry = Registry()
    registry.add_hook_result("cluster provider", builtin_clusters.pytest_dra_cluster_providers(), "builtin-clusters")
    registry.add_hook_result("driver deployer", builtin_drivers.pytest_dra_driver_deployers(), "builtin-drivers")
    if lab:
        registry.add_entry_points()
    return registry


def test_shipped_providers_and_deploy_modes_register_through_the_hooks():
    registry = shipped(lab=False)
    assert registry.names("cluster provider") == ("existing",)
    assert registry.names("driver deployer") == ("bundled", "helm", "host", "manifests", "preinstalled")


def test_the_lab_registers_local_and_kind_through_the_vendor_entry_points():
    registry = shipped()  # with the installed lab's dra_conformance.cluster_providers
    assert {"existing", "kind", "local"} <= set(registry.names("cluster provider"))


@pytest.mark.parametrize("kind, option", [("cluster provider", "--cluster"), ("driver deployer", "--driver-deploy")])
def test_unknown_name_names_the_input_the_known_names_and_the_fix(kind, option):
    with pytest.raises(ConfigError) as info:
        shipped().check(kind, "minikube")
    text = str(info.value)
    assert info.value.source == option and "'minikube'" in text
    assert ("existing" in text) if kind == "cluster provider" else ("preinstalled" in text)
    assert "-p MODULE" in info.value.fix and "dra_conformance." in info.value.fix


def test_a_third_party_deployer_registers_without_touching_conformance():
    registry = shipped()
    registry.add_hook_result("driver deployer", vendor_deployer.pytest_dra_driver_deployers(), "vendor-plugin")
    assert registry.driver_deployer("vendor-operator") is vendor_deployer.VendorOperatorDeployer
    assert registry.source("driver deployer", "vendor-operator") == "vendor-plugin"


def test_a_profile_may_name_a_registered_third_party_mode_with_its_declared_keys(tmp_path):
    path = tmp_path / "reference.yaml"  # the profile's name is its file stem (profiles.check_file)
    path.write_text(Path(profiles.resolve("reference")).read_text().replace("mode: bundled", "mode: vendor-operator"))
    with pytest.raises(ConfigError, match="unknown deploy mode 'vendor-operator'"):
        profiles.load(str(path), shipped().deploy_modes())
    registry = shipped()
    registry.add_hook_result("driver deployer", vendor_deployer.pytest_dra_driver_deployers(), "vendor-plugin")
    assert registry.deploy_modes() == {"vendor-operator": frozenset({"devices"})}
    assert profiles.load(str(path), registry.deploy_modes()).deploy_mode == "vendor-operator"
    path.write_text(path.read_text().replace("mode: vendor-operator", "mode: vendor-operator\n  chart: x"))
    with pytest.raises(ConfigError) as info:
        profiles.load(str(path), registry.deploy_modes())
    assert info.value.field == "deploy.chart" and "vendor-operator takes devices" in info.value.fix


def test_a_name_registered_twice_names_both_sources():
    registry = shipped()
    with pytest.raises(ConfigError) as info:
        registry.add_driver_deployer("helm", lambda ctx: None, source="vendor-plugin")
    assert "builtin-drivers" in str(info.value) and "vendor-plugin" in str(info.value)


def test_malformed_hook_results_are_config_errors():
    with pytest.raises(ConfigError, match="not a mapping"):
        Registry().add_hook_result("cluster provider", ["local"], "bad-plugin")
    with pytest.raises(ConfigError, match="not a factory"):
        Registry().add_hook_result("driver deployer", {"x": "not callable"}, "bad-plugin")


def test_entry_points_load_on_first_use_and_a_broken_one_is_a_config_error():
    registry = Registry()
    registry.add_entry_points(
        [
            importlib.metadata.EntryPoint(
                "vendor-operator", "tests.plugins.vendor_deployer:VendorOperatorDeployer", DEPLOYER_GROUP
            ),
            importlib.metadata.EntryPoint("broken", "no_such_module_xyz:factory", PROVIDER_GROUP),
        ]
    )
    assert registry.driver_deployer("vendor-operator") is vendor_deployer.VendorOperatorDeployer
    assert registry.names("cluster provider") == ("broken",)
    with pytest.raises(ConfigError, match="cannot be loaded"):
        registry.cluster_provider("broken")


def test_optional_abilities_are_checked_with_isinstance(tmp_path):
    profile = profiles.load("reference")
    host = HostProcessDriver.of(profile, "bundled")
    plain = DeployedDriver.of(profile, "preinstalled")
    assert isinstance(host, handles.RestartsPlugin) and not isinstance(plain, handles.RestartsPlugin)
    assert isinstance(plain, handles.DriverHandle)
    existing = ExistingCluster(tmp_path / "kubeconfig", "v1.34.4", [ExistingNode("n0")])
    assert isinstance(existing, handles.ClusterHandle)
    assert not isinstance(existing, (handles.RunsHostProcesses, handles.RestartsKubelet, handles.HasComponentLogs))
    with pytest.raises(ConfigError, match="only the local cluster supports"):
        HostDeployer(existing, profile, None, "r", state_root=tmp_path).deploy()


class HostCluster(ExistingCluster):
    """A cluster handle with the RunsHostProcesses ability (one recorded plugin process on n0)."""

    def start_host_process(self, node, name, argv, env=None):
        raise AssertionError("not started in this test")

    def host_processes(self):
        return [SimpleNamespace(name="driver-reference", node="n0", pid=1, log_path=Path("/dev/null"))]


class FakeProvider:
    """A cluster provider registered by a test: hands out one HostCluster and records down()."""

    downs = 0

    def __init__(self, ctx):
        self.ctx = ctx

    def up(self):
        return HostCluster(Path("/nonexistent/kubeconfig"), "v1.34.4", [ExistingNode("n0")])

    def down(self):
        FakeProvider.downs += 1

    def node_access(self, choice, owner=True):
        return None

    def state(self):
        return {}

    def attach(self, state):
        return self.up()


def test_session_takes_provider_and_deployer_from_the_registry(tmp_path, monkeypatch):
    registry = shipped()
    registry.add_cluster_provider("fake", handles.creates_cluster(FakeProvider), "test")  # the run owns it
    registry.add_hook_result("driver deployer", vendor_deployer.pytest_dra_driver_deployers(), "vendor-plugin")
    fake_k8s = SimpleNamespace(unguarded=lambda: "unguarded-client", prefer_versions=lambda versions: None)
    monkeypatch.setattr(session_mod.K8s, "from_kubeconfig", classmethod(lambda cls, *a, **kw: fake_k8s))
    monkeypatch.setattr(session_mod.discovery, "server_version", lambda k8s: "v1.34.4")
    monkeypatch.setattr(session_mod.sweep, "sweep_run", lambda k8s, run_id: [])
    seen = {}

    def discover(k8s, profile, **kwargs):
        seen.update(kwargs)
        return Capabilities({}), {"served_versions": {}, "devices": [], "nodes": []}

    monkeypatch.setattr(session_mod.facts_mod, "discover", discover)
    monkeypatch.setattr(HostDeployer, "deploy", lambda self: HostProcessDriver.of(self.profile, "bundled", version="v"))
    monkeypatch.setattr(HostDeployer, "teardown", lambda self: None)
    cfg = RunConfig(
        cluster="fake", driver="reference", driver_deploy="vendor-operator", run_id="r-0001", report_dir=str(tmp_path)
    )
    session = session_mod.Session(cfg, tmp_path, registry)
    session.setup()
    assert isinstance(session.deployer, vendor_deployer.VendorOperatorDeployer)
    assert session.driver.deploy_mode == "vendor-operator" and session.driver.version.startswith("vendor-operator")
    assert isinstance(seen["driver"], handles.RestartsPlugin)
    assert json.loads((tmp_path / "run.json").read_text())["driver"]["deploy"] == "vendor-operator"
    state = json.loads((tmp_path / session_mod.STATE_FILE).read_text())
    assert state["cluster"]["provider"] == "fake" and state["driver"]["deploy"] == "vendor-operator"
    worker = session_mod.Session.attach(tmp_path, registry, wait_s=1)
    assert worker.driver.deploy_mode == "vendor-operator" and sorted(worker.driver.processes) == ["n0"]
    assert worker.deployer is None and worker.cluster_provider is None  # a worker owns nothing
    assert session.teardown() == [] and FakeProvider.downs == 1


def _collect(report: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--driver",
            "reference",
            "--report-dir",
            str(report),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_the_plugin_option_p_makes_a_vendor_deployer_known_to_the_harness(tmp_path):
    without = _collect(tmp_path, "--driver-deploy", "vendor-operator")
    assert without.returncode == 4, without.stdout + without.stderr
    assert "unknown driver deployer 'vendor-operator'" in without.stderr and "preinstalled" in without.stderr
    with_plugin = _collect(tmp_path, "--driver-deploy", "vendor-operator", "-p", "tests.plugins.vendor_deployer")
    assert with_plugin.returncode == 0, with_plugin.stdout + with_plugin.stderr


def test_a_lab_provider_without_the_lab_names_the_distribution_that_brings_it():
    with pytest.raises(ConfigError) as info:
        shipped(lab=False).check("cluster provider", "local")
    assert "dra-conformance-lab wheel" in info.value.fix and "existing" in info.value.fix
    assert "pip install dra-conformance-lab" not in info.value.fix  # not on PyPI: never send users to an index
    assert "use use" not in info.value.fix and "clusters), or use one of" in info.value.fix


def test_a_command_of_an_absent_distribution_names_it(monkeypatch, capsys):
    from conformance import cli

    monkeypatch.setattr(cli, "command_modules", lambda: [])
    assert cli.main(["setup"]) == 4 and "dra-conformance-lab wheel built with this one" in capsys.readouterr().out
    assert cli.main(["matrix", "--versions", "1.34"]) == 4 and "dra-conformance-tools" in capsys.readouterr().out
