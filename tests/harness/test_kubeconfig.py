"""One kubeconfig resolution for every client (issue 22 §1): ``--kubeconfig`` -> ``$KUBECONFIG`` (a merged list)
-> ``~/.kube/config``, with ``--context``; our client, the existing provider, helm and kubectl all use it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conformance import toolbox
from conformance.clusters.existing import ExistingProvider
from conformance.core import profile as schema
from conformance.core.config import RunConfig
from conformance.core.errors import ConfigError
from conformance.core.handles import ProviderContext
from conformance.drivers import helm, manifests
from conformance.k8s import kubeconfig
from conformance.k8s.client import K8s

PROFILE = {
    "name": "x",
    "driver": "x.example.com",
    "device_classes": ["x.example.com"],
    "visibility": {"env_regex": "^X="},
}


def test_the_flag_wins_over_the_environment_and_the_home_file(tmp_path):
    kube = kubeconfig.resolve("/k/flag", "ctx", env={"KUBECONFIG": "/k/env"}, home=tmp_path)
    assert (kube.paths, kube.context, kube.source) == ((Path("/k/flag"),), "ctx", "--kubeconfig")


def test_the_environment_is_a_list_merged_in_order_without_empty_entries(tmp_path):
    kube = kubeconfig.resolve(None, env={"KUBECONFIG": f"/k/a{os.pathsep}{os.pathsep}/k/b"}, home=tmp_path)
    assert (kube.paths, kube.source, kube.context) == ((Path("/k/a"), Path("/k/b")), "$KUBECONFIG", None)
    assert kube.path == f"/k/a{os.pathsep}/k/b"


def test_without_flag_or_environment_the_home_file_is_used(tmp_path):
    for env in ({}, {"KUBECONFIG": ""}):
        kube = kubeconfig.resolve(None, "", env=env, home=tmp_path)
        assert (kube.paths, kube.source, kube.context) == ((tmp_path / ".kube" / "config",), "~/.kube/config", None)


def test_helm_and_kubectl_get_the_file_and_their_own_context_flag():
    one = kubeconfig.resolve("/k/one", "prod")
    assert one.cli_args("helm") == ["--kubeconfig", "/k/one", "--kube-context", "prod"]
    assert one.cli_args("kubectl") == ["--kubeconfig", "/k/one", "--context", "prod"]
    assert kubeconfig.resolve("/k/one").cli_args("helm") == ["--kubeconfig", "/k/one"]
    listed = kubeconfig.resolve(None, "prod", env={"KUBECONFIG": "/k/a:/k/b"})
    assert listed.cli_args("kubectl") == ["--context", "prod"]  # one --kubeconfig cannot carry a list: env does
    assert listed.env({"PATH": "/bin"}) == {"PATH": "/bin", "KUBECONFIG": "/k/a:/k/b"}
    with pytest.raises(KeyError):
        one.cli_args("oc")


def test_a_given_context_replaces_the_resolved_ones_and_none_keeps_it():
    kube = kubeconfig.resolve("/k/one", "a")
    assert kubeconfig.of(kube).context == "a" and kubeconfig.of(kube, "b").context == "b"
    assert kubeconfig.of("/k/x", "c") == kubeconfig.Kubeconfig((Path("/k/x"),), "c", "--kubeconfig")


def _kubeconfig_files(tmp_path: Path) -> tuple[Path, Path]:
    """Two files as an admin splits them: clusters and users in one, contexts and the current one in the other."""
    first = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "a", "cluster": {"server": "https://a.invalid:6443"}},
            {"name": "b", "cluster": {"server": "https://b.invalid:7443"}},
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    second = {
        "apiVersion": "v1",
        "kind": "Config",
        "contexts": [
            {"name": "ctx-a", "context": {"cluster": "a", "user": "u"}},
            {"name": "ctx-b", "context": {"cluster": "b", "user": "u"}},
        ],
        "current-context": "ctx-a",
    }
    paths = (tmp_path / "clusters.yaml", tmp_path / "contexts.yaml")
    for path, doc in zip(paths, (first, second), strict=True):
        path.write_text(yaml.safe_dump(doc))
    return paths


def test_our_client_merges_a_kubeconfig_list_and_takes_the_context(tmp_path, monkeypatch):
    a, b = _kubeconfig_files(tmp_path)
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    assert K8s.from_kubeconfig().host == "https://a.invalid:6443"  # the merged current-context
    assert K8s.from_kubeconfig(None, "ctx-b").host == "https://b.invalid:7443"
    # an unknown context is bad input (exit 4) naming the contexts the files define, not an unreachable cluster
    with pytest.raises(ConfigError, match=r"no context 'nope' \(its contexts: \['ctx-a', 'ctx-b'\]\)") as exc:
        K8s.from_kubeconfig(None, "nope")
    assert exc.value.source == "--context"


def test_the_existing_cluster_resolves_kubeconfig_and_context_like_every_client(tmp_path, monkeypatch):
    a, b = _kubeconfig_files(tmp_path)
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    provider = ExistingProvider(ProviderContext(RunConfig(cluster="existing", context="ctx-b"), tmp_path))
    kube = provider._kubeconfig()
    assert (kube.paths, kube.context, kube.source) == ((a, b), "ctx-b", "$KUBECONFIG")  # not ~/.kube/config
    flagged = ExistingProvider(ProviderContext(RunConfig(cluster="existing", kubeconfig=str(a)), tmp_path))
    assert flagged._kubeconfig().paths == (a,)


def _captured(monkeypatch) -> list:
    seen = []

    def run(cmd, **kwargs):
        seen.append((cmd, kwargs.get("env") or {}))
        return subprocess.CompletedProcess(cmd, 0, "[]", "")

    monkeypatch.setattr(toolbox, "program", lambda name, **kw: Path(f"/bin/{name}"))
    monkeypatch.setattr(subprocess, "run", run)
    return seen


def test_helm_and_kubectl_of_the_deployers_use_the_runs_kubeconfig_and_context(tmp_path, monkeypatch):
    seen = _captured(monkeypatch)
    kube = kubeconfig.resolve(None, "prod", env={"KUBECONFIG": "/k/a:/k/b"})
    cluster = SimpleNamespace(kubeconfig=Path("/k/handle"), k8s_version="v1.34.4", nodes=[])
    h = helm.HelmDeployer(
        cluster, schema.parse({**PROFILE, "deploy": {"mode": "helm", "chart": "c/"}}), None, kube=kube
    )
    h._helm("list")
    m_profile = schema.parse({**PROFILE, "deploy": {"mode": "manifests", "dir": "d"}})
    manifests.ManifestsDeployer(cluster, m_profile, None, tmp_path, kube=kube)._kubectl("get", "-f", "x")
    (helm_cmd, helm_env), (kubectl_cmd, kubectl_env) = seen
    assert helm_cmd == ["/bin/helm", "--kube-context", "prod", "list"] and helm_env["KUBECONFIG"] == "/k/a:/k/b"
    assert kubectl_cmd == ["/bin/kubectl", "--context", "prod", "get", "-f", "x"]
    assert kubectl_env["KUBECONFIG"] == "/k/a:/k/b"
    seen.clear()  # without a resolved kubeconfig (a direct caller): the handle's file, its current context
    helm.HelmDeployer(cluster, h.profile, None)._helm("list")
    assert seen[0][0] == ["/bin/helm", "--kubeconfig", "/k/handle", "list"] and seen[0][1]["KUBECONFIG"] == "/k/handle"


def test_a_kubeconfig_flag_naming_no_file_is_bad_input_not_an_unreachable_cluster(tmp_path):
    from conformance.core.errors import ConfigError
    from conformance.k8s.client import K8s

    with pytest.raises(ConfigError) as info:
        K8s.from_kubeconfig(str(tmp_path / "nope"))
    assert info.value.source == "--kubeconfig" and "nope" in str(info.value)


def test_no_kubeconfig_at_the_default_path_is_bad_input_naming_how_to_give_one(tmp_path, monkeypatch):
    """No ~/.kube/config and no $KUBECONFIG: exit 4 naming the file and both fixes (breaker s14 B4: it was
    "Invalid kube-config file. No configuration found.", exit 3)."""
    from conformance.core.errors import ConfigError
    from conformance.k8s.client import K8s

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError) as info:
        K8s.from_kubeconfig(None)
    text = str(info.value)
    assert "no such kubeconfig file" in text and str(tmp_path / ".kube" / "config") in text, text
    assert "--kubeconfig PATH" in text and "KUBECONFIG=" in text, text


def test_an_empty_file_in_a_kubeconfig_list_is_skipped_as_kubectl_skips_it(tmp_path, monkeypatch):
    """Breaker s15 D3: ``KUBECONFIG=empty.kc:a.kc`` (a ``touch ~/.kube/config`` is common) failed in the Python
    client's loader ("empty.kc file is empty") and ended "cluster or driver not usable", exit 3; client-go's
    ``clientcmd.Load`` reads an empty file as an empty config, so the list is the other files."""
    a, b = _kubeconfig_files(tmp_path)
    empty, blank = tmp_path / "empty.kc", tmp_path / "blank.kc"
    empty.write_text("")
    blank.write_text("# nothing here yet\n\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, (empty, a, blank, b))))
    kube = kubeconfig.resolve(None, "ctx-b").existing()
    assert (kube.paths, kube.context, kube.source) == ((a, b), "ctx-b", "$KUBECONFIG")
    assert K8s.from_kubeconfig(None, "ctx-b").host == "https://b.invalid:7443"
    assert K8s.from_kubeconfig().host == "https://a.invalid:6443"  # the merged current-context of the others
    with pytest.raises(ConfigError, match=r"no context 'nope' \(its contexts: \['ctx-a', 'ctx-b'\]\)"):
        K8s.from_kubeconfig(None, "nope")
    missing = tmp_path / "missing.kc"  # a missing file in a list stays the client's to skip, as before
    assert kubeconfig.resolve(f"{missing}{os.pathsep}{empty}{os.pathsep}{a}").existing().paths == (missing, a)


@pytest.mark.parametrize(
    "text, flag, problem",
    [
        ("", True, "not a kubeconfig: empty"),
        ("  \n# only a comment\n", True, "not a kubeconfig: empty"),
        ("", False, "not a kubeconfig: empty"),  # a one-file $KUBECONFIG list
        ("- a\n- b\n", True, r"not a kubeconfig: not a mapping \(its YAML is a list\)"),
        ("just text\n", False, r"not a kubeconfig: not a mapping \(its YAML is a str\)"),
        ("clusters: [\n", True, r"not a kubeconfig: not YAML \(.* at line \d+\)"),
    ],
)
def test_a_lone_kubeconfig_that_is_empty_or_not_a_mapping_is_bad_input_naming_the_file(
    tmp_path, monkeypatch, text, flag, problem
):
    """Breaker s15 D3: bad input (ConfigError: exit 4) naming the file and the fix, not ClusterUnavailable
    (exit 3) from the client's loader; with or without --context."""
    bad = tmp_path / "bad.kc"
    bad.write_text(text)
    monkeypatch.setenv("KUBECONFIG", str(bad))
    for context in (None, "prod"):
        with pytest.raises(ConfigError, match=problem) as info:
            K8s.from_kubeconfig(str(bad) if flag else None, context)
        assert str(bad) in str(info.value) and "(fix: " in str(info.value)
        assert info.value.source.endswith("(from --kubeconfig)" if flag else "(from $KUBECONFIG)")
    a, _ = _kubeconfig_files(tmp_path)
    if text.strip() and not text.lstrip().startswith("#"):  # not a mapping is bad in a list too
        with pytest.raises(ConfigError, match=problem):
            kubeconfig.resolve(f"{a}{os.pathsep}{bad}").existing()


@pytest.mark.parametrize(
    ("data", "byte"), [(b"\xff\xfe\x00bad", "0xff"), ("current-context: \u00a7x\n".encode("latin-1"), "0xa7")]
)
def test_a_kubeconfig_that_is_not_utf8_is_bad_input_naming_the_file_and_the_byte(tmp_path, data, byte):
    """s16 new-user F2: a UTF-16 or Latin-1 kubeconfig was a UnicodeDecodeError traceback (exit 1 or 3)."""
    bad = tmp_path / "binary.kc"
    bad.write_bytes(data)
    with pytest.raises(ConfigError, match=rf"not a kubeconfig: not UTF-8 text \(byte {byte} at offset \d+\)") as info:
        K8s.from_kubeconfig(str(bad))
    assert str(bad) in str(info.value) and "(fix: save the file as UTF-8)" in str(info.value)
