"""A bad ``upgrade_from`` (the upgrade lane's previous version) is refused when the driver profile is loaded,
with the check the upgrade lane applies (helm_upgrade.previous_spec), so ``dra-conformance run`` exits 4 in
seconds, before any cluster starts, naming the profile file, the field and the fix."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conformance.core.errors import ConfigError
from conformance.drivers import profiles

REPO = Path(__file__).resolve().parents[2]
BASE = {
    "name": "bad-upgrade",
    "driver": "gpu.example.com",
    "device_classes": ["gpu.example.com"],
    "visibility": {"env_regex": "^GPU="},
}
HELM = {"chart": "c/", "release": "r"}


def _write(tmp_path: Path, **fields) -> Path:
    path = tmp_path / "bad-upgrade.yaml"
    (tmp_path / "c").mkdir(exist_ok=True)  # the relative chart must exist (profiles.check_file)
    path.write_text(yaml.safe_dump({**BASE, **fields}))
    return path


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"deploy": {"mode": "helm", **HELM, "upgrade_from": "v1"}}, "deploy.upgrade_from"),
        (
            {
                "deploy": {"mode": "bundled"},
                "deploy_alternatives": {"helm": {**HELM, "upgrade_from": {"name": "v1", "x": 1}}},
            },
            "deploy_alternatives.helm.upgrade_from",
        ),
    ],
)
def test_loading_a_profile_refuses_a_bad_upgrade_from_naming_file_and_field(tmp_path, fields, field):
    path = _write(tmp_path, **fields)
    with pytest.raises(ConfigError) as info:
        profiles.load(str(path))
    assert info.value.source == str(path) and info.value.field == field and info.value.fix
    assert str(info.value).startswith(f"{path}: {field}: ")


def test_a_good_upgrade_from_loads_and_no_upgrade_from_is_fine(tmp_path):
    good = _write(tmp_path, deploy={"mode": "helm", **HELM, "upgrade_from": {"name": "v1", "values": {"a": 1}}})
    assert profiles.load(str(good)).deploy["upgrade_from"]["name"] == "v1"
    assert profiles.load(str(_write(tmp_path, deploy={"mode": "helm", **HELM}))).deploy_mode == "helm"


def test_run_with_a_bad_upgrade_from_exits_4_in_seconds_before_any_cluster(tmp_path):
    path = _write(tmp_path, deploy={"mode": "helm", **HELM, "upgrade_from": {"chart": "old/"}})
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--cluster", "local", "--driver", str(path)]
        + ["--report-dir", str(tmp_path / "report"), "--no-report"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert f"{path}: deploy.upgrade_from: upgrade_from must be a mapping with a name" in out
    assert "VERDICT: ERROR (bad input)" in proc.stdout and "cluster local reachable" not in out
    assert took < 60, f"the refusal took {took:.0f}s"
