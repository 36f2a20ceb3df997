"""The locator seam (conformance/toolbox.py): locators first, then $DRA_CONFORMANCE_<NAME>, then PATH; a
missing program names all three and the fix."""

from __future__ import annotations

import pytest

from conformance import toolbox


class _Locator:
    def program(self, name, *, tool=None, k8s_version=None):
        return f"/lab/{k8s_version or tool or name}/{name}" if name == "kubectl" else None


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setattr(toolbox, "locators", lambda: (_Locator(),))
    monkeypatch.delenv("DRA_CONFORMANCE_HELM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_locator_answers_first_then_the_env_var_then_path(env, monkeypatch):
    assert str(toolbox.program("kubectl", k8s_version="v1.34.4")) == "/lab/v1.34.4/kubectl"
    on_path = _exe(env / "bin" / "helm")
    assert toolbox.program("helm") == on_path
    given = _exe(env / "opt" / "helm")
    monkeypatch.setenv("DRA_CONFORMANCE_HELM", str(given))
    assert toolbox.program("helm") == given


def test_a_missing_program_names_where_it_looked_and_the_fix(env, monkeypatch):
    with pytest.raises(toolbox.ToolMissing) as info:
        toolbox.program("helm")
    assert "DRA_CONFORMANCE_HELM" in str(info.value) and "PATH" in str(info.value)
    monkeypatch.setenv("DRA_CONFORMANCE_HELM", str(env / "nope"))
    with pytest.raises(toolbox.ToolMissing, match="nope"):
        toolbox.program("helm")
    with pytest.raises(toolbox.ToolMissing, match="dra-conformance-lab"):
        toolbox.go_module_dir("dra-example-driver", "deployments/helm")
    with pytest.raises(toolbox.ToolMissing, match="deploy.images"):
        toolbox.build_images(["busybox"], {})
