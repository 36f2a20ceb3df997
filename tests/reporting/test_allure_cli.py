"""Where the Allure CLI comes from (conformance/reporting/allure_cli.py): the env var, the user's cache, PATH,
else installed on demand; without npm the error names the fixes."""

from __future__ import annotations

import os

import pytest

from conformance.reporting import allure_cli


def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def clean(tmp_path, monkeypatch):
    monkeypatch.delenv(allure_cli.ENV_VAR, raising=False)
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return tmp_path


def test_the_env_var_wins_then_the_cache_then_path(clean, monkeypatch):
    on_path = _exe(clean / "bin" / "allure")
    assert allure_cli.find() == on_path
    cached = _exe(allure_cli.cached())
    assert allure_cli.find() == cached and str(cached).startswith(str(clean / "cache" / "allure"))
    given = _exe(clean / "elsewhere" / "allure")
    monkeypatch.setenv(allure_cli.ENV_VAR, str(given))
    assert allure_cli.find() == given


def test_a_missing_cli_without_npm_names_the_fixes_and_a_bad_env_var_is_named(clean, monkeypatch):
    with pytest.raises(allure_cli.AllureMissing) as info:
        allure_cli.find()
    assert "npm" in str(info.value) and allure_cli.ENV_VAR in str(info.value)
    assert not (clean / "cache" / "allure").exists() or not os.listdir(clean / "cache" / "allure")
    monkeypatch.setenv(allure_cli.ENV_VAR, str(clean / "nope"))
    with pytest.raises(allure_cli.AllureMissing, match="nope"):
        allure_cli.find()


def test_the_pinned_version_comes_from_the_shipped_lock():
    assert allure_cli.pinned_version().count(".") == 2
    assert (allure_cli.PINS / "package-lock.json").is_file()
