"""The helm deployer's chart resolution and the profile's deploy_alternatives (no cluster)."""

from __future__ import annotations

import pytest

from conformance import shipped
from conformance.core import profile as schema
from conformance.core.errors import ConfigError
from conformance.drivers import helm

BASE = {
    "name": "x",
    "driver": "x.example.com",
    "device_classes": ["x.example.com"],
    "visibility": {"env_regex": "^X="},
    "deploy": {"mode": "host", "binary": {"tool": "t", "name": "b"}},
}


def test_deploy_alternative_replaces_deploy_only_for_its_mode():
    p = schema.parse({**BASE, "deploy_alternatives": {"helm": {"chart": "c/", "values": {"a": 1}}}})
    assert p.for_mode("host") is p
    h = p.for_mode("helm")
    assert (h.deploy_mode, h.deploy["chart"], h.deploy["values"]) == ("helm", "c/", {"a": 1})
    assert p.for_mode("manifests") is p  # no alternative: the deployer's own check reports it


def test_deploy_alternative_is_validated_like_deploy():
    with pytest.raises(ConfigError, match="helm deploy needs a chart"):
        schema.parse({**BASE, "deploy_alternatives": {"helm": {"values": {}}}})
    with pytest.raises(ConfigError, match="dir"):
        schema.parse({**BASE, "deploy_alternatives": {"helm": {"chart": "c", "dir": "d"}}})


def test_chart_paths_resolve_against_the_repository_and_refs_pass_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert helm.resolve_chart("fixtures/drivers") == str(shipped.SOURCE_ROOT / "fixtures/drivers")
    assert helm.resolve_chart("oci://example.invalid/charts/x") == "oci://example.invalid/charts/x"
    assert helm.resolve_chart("repo/name") == "repo/name"


def test_chart_mapping_needs_go_module_and_path():
    with pytest.raises(ConfigError, match="go_module and path"):
        helm.resolve_chart({"go_module": "dra-example-driver"})
    with pytest.raises(ConfigError, match="no-such-tool"):
        helm.resolve_chart({"go_module": "no-such-tool", "path": "x"})
