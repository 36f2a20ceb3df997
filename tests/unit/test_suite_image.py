"""The suite image's inputs (lab/conformance_lab/toolchain/images/suite_image.py) and its place in the catalog."""

from __future__ import annotations

import shutil
import tomllib

import pytest
from conformance_lab.toolchain import versions
from conformance_lab.toolchain.images import catalog, debian, suite_image


def test_wheels_are_the_plugins_dependencies_at_their_pins():
    deps = tomllib.loads((versions.REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = dict(r.split("==") for r in suite_image.requirements())
    assert "matplotlib" not in reqs and len(reqs) == len(deps)
    pins = versions.load().python
    assert reqs["pytest"] == pins["pytest"] and reqs["kubernetes"] == pins["kubernetes"]


def test_suite_is_built_only_when_named_and_always_listed():
    assert "suite" not in [s.name for s in catalog.select([])]
    assert [s.name for s in catalog.select(["suite"])] == ["suite"]
    assert "suite" in [s.name for s in catalog.select([], include_optional=True)]
    assert catalog.select(["suite"])[0].ref() == "dra-conformance.local/suite:dev"


def test_the_image_runs_dra_conformance_run_with_our_cache_and_allure():
    cfg = suite_image.image_config()
    assert cfg.entrypoint == ("dra-conformance", "run") and "--cluster" in cfg.cmd
    env = dict(e.split("=", 1) for e in cfg.env)
    assert env["DRA_CONFORMANCE_ALLURE"].startswith(suite_image.ALLURE_IN_IMAGE)
    assert env["DRA_CONFORMANCE_CACHE"] == suite_image.CACHE_IN_IMAGE and env["PYTHONPATH"] == "/app"


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="needs apt (a Debian-like host)")
def test_a_root_pinned_to_a_version_resolves_at_that_version():
    """Debian's nodejs where the host has a newer one from another source installed (not downloadable)."""
    pinned = next(r for r in versions.load().images["suite-debian"] if r.startswith("nodejs="))
    packages = {p.name: p for p in debian.resolve([pinned])}
    assert packages["nodejs"].version == pinned.split("=", 1)[1]
    assert "libnode108" in packages and "perl" not in packages
