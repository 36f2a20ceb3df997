"""versions.toml parsing and Kubernetes tag resolution."""

import json

import pytest
from conformance_lab.toolchain import k8s, versions
from conformance_lab.toolchain.k8s import staging_modules, upstream_directives, version_ldflags


def test_pinned_default_is_a_1_34_patch():
    v = versions.load()
    assert v.k8s_default == "1.34"
    assert v.k8s_tag().startswith("v1.34."), v.k8s_releases


@pytest.mark.parametrize("given", ["1.35", "v1.35", "1.35.6", "v1.35.6"])
def test_k8s_tag_accepts_minor_and_exact_forms(given):
    """The pinned 1.35 tag (v1.35.6: v1.35.4's kube-scheduler panics, kubernetes/kubernetes#138882) by minor or
    exact tag; another patch of that minor is refused (below)."""
    v = versions.load()
    assert v.k8s_tag(given) == v.k8s_releases["1.35"] == "v1.35.6"


@pytest.mark.parametrize(
    "given,needle",
    [
        ("1.99", "pinned:"),
        ("banana", "not a Kubernetes version"),
        ("1.35.99", "only v1.35"),
        ("v1.35.4", "only v1.35.6"),
    ],
)
def test_k8s_tag_rejects_unknown_versions_with_the_fix(given, needle):
    with pytest.raises(versions.VersionError, match=needle):
        versions.load().k8s_tag(given)


def test_staging_version_maps_v1_to_v0():
    assert versions.staging_version("v1.34.4") == "v0.34.4"
    assert versions.staging_version("v1.37.0-rc.1") == "v0.37.0-rc.1"
    with pytest.raises(versions.VersionError):
        versions.staging_version("1.34")


def test_load_names_the_missing_key(tmp_path):
    bad = tmp_path / "versions.toml"
    bad.write_text('[kubernetes]\ndefault = "1.34"\n')
    with pytest.raises(versions.VersionError, match="missing key 'releases'"):
        versions.load(bad)


def test_staging_modules_and_directives_from_an_upstream_gomod():
    gomod = """module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/x/y => github.com/x/y v1.0.0
)
"""
    assert staging_modules(gomod) == ["k8s.io/api", "k8s.io/client-go"]
    assert upstream_directives(gomod) == ("1.24.0", ["godebug default=go1.24"])


def test_version_ldflags_stamp_both_version_packages():
    flags = version_ldflags("v1.36.3", "abc")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion=v1.36.3" in flags
        assert f"-X {pkg}.gitMinor=36" in flags
        assert f"-X {pkg}.gitCommit=abc" in flags


def test_staging_fallbacks_are_earlier_patches_of_a_pinned_tag(tmp_path):
    """v1.35.6 builds k8s.io/kube-proxy and k8s.io/externaljwt at v0.35.5 (the proxy refuses their v0.35.6); a
    fallback for a tag not pinned, or not an earlier patch of the same minor, is refused naming the key."""
    v = versions.load()
    assert v.k8s_staging_fallbacks["v1.35.6"] == {"k8s.io/kube-proxy": "v0.35.5", "k8s.io/externaljwt": "v0.35.5"}
    text = versions.VERSIONS_FILE.read_text()
    line = '"v1.35.6" = { "k8s.io/kube-proxy" = "v0.35.5", "k8s.io/externaljwt" = "v0.35.5" }'
    assert line in text
    for bad, needle in (
        ('"v1.35.5" = { "k8s.io/kube-proxy" = "v0.35.4" }', "not a pinned tag"),
        ('"v1.35.6" = { "k8s.io/kube-proxy" = "v0.35.6" }', "not an earlier v0.35.<patch>"),
        ('"v1.35.6" = { "k8s.io/kube-proxy" = "v0.34.9" }', "not an earlier v0.35.<patch>"),
    ):
        path = tmp_path / "versions.toml"
        path.write_text(text.replace(line, bad))
        with pytest.raises(versions.VersionError, match=needle):
            versions.load(path)


def test_prepare_replaces_the_refused_staging_modules_with_their_fallback(tmp_path, monkeypatch):
    """The wrapper module of v1.35.6 replaces every staging module with v0.35.6 except the fallbacks (no Go run:
    the download and tidy are faked), and the prepared build records them for the cache entry's info."""
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    names = [f"k8s.io/m{i}" for i in range(20)] + ["k8s.io/kube-proxy", "k8s.io/externaljwt"]
    gomod = tmp_path / "upstream.mod"
    gomod.write_text("module k8s.io/kubernetes\n\ngo 1.25.0\n\nreplace (\n")
    gomod.write_text(gomod.read_text() + "".join(f"\t{m} => ./staging/src/{m}\n" for m in names) + ")\n")
    monkeypatch.setattr(k8s, "run_go", lambda args, *_: json.dumps({"GoMod": str(gomod)}) if "-json" in args else "")
    seen = {}
    monkeypatch.setattr(k8s, "write_wrapper", lambda work, req, pkgs, replaces, *_: seen.update(replaces))
    prep = k8s.prepare("v1.35.6", tmp_path / "log")
    assert seen["k8s.io/kube-proxy"] == "k8s.io/kube-proxy@v0.35.5" and seen["k8s.io/m3"] == "k8s.io/m3@v0.35.6"
    assert prep["staging_fallbacks"] == {"k8s.io/kube-proxy": "v0.35.5", "k8s.io/externaljwt": "v0.35.5"}
