"""versions.toml parsing and Kubernetes tag resolution."""

import pytest
from conformance_lab.toolchain import versions
from conformance_lab.toolchain.k8s import staging_modules, upstream_directives, version_ldflags


def test_pinned_default_is_a_1_34_patch():
    v = versions.load()
    assert v.k8s_default == "1.34"
    assert v.k8s_tag().startswith("v1.34."), v.k8s_releases


@pytest.mark.parametrize("given", ["1.35", "v1.35", "1.35.4", "v1.35.4"])
def test_k8s_tag_accepts_minor_and_exact_forms(given):
    v = versions.load()
    assert v.k8s_tag(given) == v.k8s_releases["1.35"]


@pytest.mark.parametrize(
    "given,needle", [("1.99", "pinned:"), ("banana", "not a Kubernetes version"), ("1.35.99", "only v1.35")]
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
