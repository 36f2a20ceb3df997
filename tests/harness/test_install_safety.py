"""Never touch a customer's driver by accident (issue 22 §1), without a cluster: which providers create their
cluster, the effective deploy mode, the CLI's exit codes, and the helm and manifests deployers refusing a release
or objects they did not create (nothing installed, nothing removed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conformance_lab import providers

from conformance.clusters import builtin as builtin_clusters
from conformance.core import handles
from conformance.core import profile as schema
from conformance.core.config import RunConfig, deploy_mode, from_options
from conformance.core.errors import ConfigError
from conformance.drivers import builtin as builtin_drivers
from conformance.drivers import bundle, helm, manifests
from conformance.runner import session as session_mod
from conformance.runner.registry import Registry

REPO = Path(__file__).resolve().parents[2]
PROFILE = {
    "name": "x",
    "driver": "x.example.com",
    "device_classes": ["x.example.com"],
    "visibility": {"env_regex": "^X="},
}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}


def _registry() -> Registry:
    registry = Registry()
    registry.add_hook_result("cluster provider", builtin_clusters.pytest_dra_cluster_providers(), "builtin-clusters")
    registry.add_hook_result("driver deployer", builtin_drivers.pytest_dra_driver_deployers(), "builtin-drivers")
    registry.add_entry_points()  # the lab's local and kind, as a run loads them
    return registry


def test_local_and_kind_create_their_cluster_existing_and_unmarked_third_parties_do_not():
    registry = _registry()
    registry.add_cluster_provider("vendor-plain", lambda ctx: None, "vendor")
    registry.add_cluster_provider("vendor-own", handles.creates_cluster(lambda ctx: None), "vendor")
    owned = {name: registry.creates_cluster(name) for name in registry.names("cluster provider")}
    assert owned == {"existing": False, "kind": True, "local": True, "vendor-own": True, "vendor-plain": False}
    assert isinstance(providers.local, handles.CreatesCluster) and isinstance(providers.kind, handles.CreatesCluster)
    assert not isinstance(builtin_clusters.existing, handles.CreatesCluster)
    with pytest.raises(ConfigError, match="unknown cluster provider 'nope'"):
        registry.creates_cluster("nope")


# (owned, --driver-deploy, --allow-install) -> the mode, for a profile whose own mode is helm; "refused": exit 4
TABLE = [
    (True, None, False, "helm"),
    (True, None, True, "helm"),
    (True, "manifests", False, "manifests"),
    (True, "preinstalled", False, "preinstalled"),
    (False, None, False, "preinstalled"),
    (False, None, True, "preinstalled"),  # --allow-install alone installs nothing: the mode must be named
    (False, "preinstalled", False, "preinstalled"),
    (False, "helm", False, "refused"),
    (False, "manifests", False, "refused"),
    (False, "vendor-operator", False, "refused"),
    (False, "helm", True, "helm"),
    (False, "vendor-operator", True, "vendor-operator"),
]


@pytest.mark.parametrize(("owned", "flag", "allow", "want"), TABLE)
def test_deploy_mode_on_owned_and_foreign_clusters(owned, flag, allow, want):
    cfg = RunConfig(cluster="local" if owned else "existing", driver_deploy=flag, allow_install=allow)
    if want != "refused":
        assert deploy_mode(cfg, "helm", owned=owned) == want
        return
    with pytest.raises(ConfigError) as err:
        deploy_mode(cfg, "helm", owned=owned)
    assert str(err.value).startswith(f"--driver-deploy: {flag!r} would install") and "--allow-install" in err.value.fix


def test_allow_install_comes_from_the_options():
    assert from_options({"allow_install": True, "cluster": "existing"}).allow_install is True
    assert RunConfig().allow_install is False


def test_a_session_on_an_existing_cluster_checks_the_installed_driver_by_default(tmp_path):
    registry = _registry()
    profile_path = tmp_path / "x.yaml"
    (tmp_path / "c").mkdir()  # the chart directory a relative chart path names must exist (profiles.check_file)
    profile_path.write_text(json.dumps({**PROFILE, "deploy": {"mode": "helm", "chart": "c/"}}))
    existing = session_mod.Session(RunConfig(cluster="existing", driver=str(profile_path)), tmp_path, registry)
    local = session_mod.Session(RunConfig(cluster="local", driver=str(profile_path)), tmp_path, registry)
    assert (existing.deploy_mode, local.deploy_mode) == ("preinstalled", "helm")
    with pytest.raises(ConfigError, match="--allow-install"):
        session_mod.Session(
            RunConfig(cluster="existing", driver=str(profile_path), driver_deploy="helm"), tmp_path, registry
        )


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--driver", "reference"]
    cmd += ["--kubeconfig", str(tmp_path / "absent-kubeconfig"), "--no-report", "--report-dir", str(tmp_path)]
    return subprocess.run(
        [*cmd, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_the_cli_refuses_an_install_on_an_existing_cluster_with_exit_4_and_the_fix(tmp_path):
    refused = _run(tmp_path / "a", "--driver-deploy", "helm")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 4 and "VERDICT: ERROR (bad input)" in out, out[-3000:]
    assert "--driver-deploy: 'helm' would install" in out and "add --allow-install" in out, out[-3000:]
    # with the opt-in (and with no --driver-deploy) the input passes the install guard: the run goes on to the
    # cluster, whose kubeconfig file does not exist (bad input, exit 4, the file named)
    for argv in (("--driver-deploy", "helm", "--allow-install"), ()):
        proc = _run(tmp_path / "b", *argv)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 4 and "no such kubeconfig file" in out and "absent-kubeconfig" in out, out[-3000:]
        assert "would install" not in out


def _helm_deployer(releases: list[dict]) -> tuple[helm.HelmDeployer, list[str]]:
    """A helm deployer of profile x whose helm answers ``releases`` to ``list``; the calls are recorded."""
    p = schema.parse({**PROFILE, "deploy": {"mode": "helm", "chart": "c/", "release": "rel", "namespace": "ns"}})
    cluster = SimpleNamespace(kubeconfig=Path("/k"), nodes=[])
    d = helm.HelmDeployer(cluster, p, SimpleNamespace(exists=lambda *a: True, list=lambda *a, **k: []))
    calls: list[str] = []
    d._helm = lambda *a, **k: calls.append(" ".join(a)) or (json.dumps(releases) if a[0] == "list" else "")
    d.install = lambda spec: (_ for _ in ()).throw(RuntimeError("install failed"))  # reached only after the check
    return d, calls


def test_helm_refuses_a_release_that_exists_and_uninstalls_nothing():
    d, calls = _helm_deployer([{"name": "rel", "namespace": "ns", "status": "deployed"}])
    with pytest.raises(ConfigError, match="helm release 'rel' already exists in namespace 'ns'") as err:
        d.deploy()
    assert "deploy_alternatives" not in err.value.fix and "drop --driver-deploy" in err.value.fix
    d.teardown()
    assert calls == [r"list --all --namespace ns --filter ^rel$ --output json"]  # no upgrade, no uninstall


def test_helm_installs_a_release_that_is_absent_and_removes_only_that():
    d, calls = _helm_deployer([])
    with pytest.raises(RuntimeError, match="install failed"):
        d.deploy()
    assert [c.split()[0] for c in calls] == ["list", "uninstall"]  # the failed install is removed: it was ours


def test_manifests_refuse_a_bundle_whose_objects_exist_and_delete_nothing(tmp_path, monkeypatch):
    p = schema.parse({**PROFILE, "deploy": {"mode": "manifests", "dir": "d"}})
    d = manifests.ManifestsDeployer(SimpleNamespace(kubeconfig=Path("/k"), nodes=[]), p, None, tmp_path / "state")
    monkeypatch.setattr(d, "bundle", lambda: bundle.Bundle((CM,), "src"))
    calls: list[str] = []
    monkeypatch.setattr(d, "_kubectl", lambda *a, **k: calls.append(a[0]) or ("configmap/c\n" if a[0] == "get" else ""))
    with pytest.raises(ConfigError, match=r"1 object\(s\) of the bundle already exist, e.g. configmap/c"):
        d.deploy()
    d.teardown()
    assert calls == ["get"] and d.applied is None  # nothing applied, nothing deleted


def test_an_unknown_deploy_mode_is_named_before_the_install_guard(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--kubeconfig", "/nonexistent"]
        + ["--driver-deploy", "bogus", "--profile", "core", "--report-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 4 and "unknown driver deployer 'bogus'" in proc.stdout + proc.stderr
    assert not (tmp_path / "r").exists()
