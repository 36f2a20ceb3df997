"""End-to-end test of `dra-conformance profile init` on the shared local cluster (issue 22 §3): the reference
driver runs in host mode under a driver name of its own; `profile init` drafts a profile from what it publishes
(read-only), naming its DeviceClass, the attribute types of the shipped reference profile and the driver's
default device count per node; with the REQUIRED TODO (visibility) filled, `profile check` passes on the draft."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from conformance.core import names
from conformance.core.profile import parse
from conformance.drivers import profiles
from conformance.drivers.host import HostDeployer
from conformance.k8s.client import K8s
from reference_driver.inventory.simulated import DEFAULT_COUNT

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _cli(*argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "conformance.cli", "profile", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


def test_profile_init_drafts_the_reference_driver_and_the_filled_draft_passes_check(local_cluster, tmp_path):
    shipped = profiles.load("reference")
    driver = f"i{uuid.uuid4().hex[:6]}.dra.test"  # own name: no clash with other tests; short socket paths
    prof = parse(
        {
            "name": "e2e-init",
            "driver": driver,
            "device_classes": [driver],
            "devices_per_node": 4,
            "visibility": {"env_regex": shipped.visibility.env_regex},
            "deploy": {"mode": "bundled"},
        },
        source="e2e",
    )
    k8s = K8s.from_kubeconfig(local_cluster.kubeconfig)
    deployer = HostDeployer(local_cluster, prof, k8s, names.new_run_id(), state_root=tmp_path / "state")
    out = tmp_path / "drafted.yaml"
    try:
        deployer.deploy()
        before = _slice_versions(k8s, driver)
        proc = _cli("init", "--kubeconfig", str(local_cluster.kubeconfig), "--driver-name", driver, "-o", str(out))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        after = _slice_versions(k8s, driver)
        assert before == after  # read-only
    finally:
        deployer.teardown()
    text = out.read_text()
    draft = yaml.safe_load(text)
    assert draft["name"] == "drafted" and draft["driver"] == driver
    assert draft["device_classes"] == [driver] and draft["devices_per_node"] == DEFAULT_COUNT
    assert draft["deploy"] == {"mode": "preinstalled"} and "TODO (REQUIRED): visibility" in text
    common = {a: t for a, t in draft["attributes"].items() if a in shipped.attributes}
    assert common == dict(shipped.attributes), (draft["attributes"], dict(shipped.attributes))
    assert draft["capabilities"].get("multiple_devices") is True
    unfilled = _cli("check", str(out))
    assert unfilled.returncode == 4 and f"{out}: visibility: needs env_regex" in unfilled.stdout, unfilled.stdout
    filled = tmp_path / "drafted.yaml"
    filled.write_text(text + yaml.safe_dump({"visibility": {"env_regex": shipped.visibility.env_regex}}))
    proc = _cli("check", str(filled))
    assert proc.returncode == 0 and proc.stdout.strip() == f"ok {filled}", proc.stdout + proc.stderr


def _slice_versions(k8s, driver):
    """{slice name: resourceVersion} of ``driver``'s slices only: other tests' drivers share the cluster and
    publish beside it under xdist, so the whole list is not this test's to compare."""
    slices = k8s.list("ResourceSlice")
    return {s.get("metadata.name"): s.get("metadata.resourceVersion") for s in slices if s.get("spec.driver") == driver}
