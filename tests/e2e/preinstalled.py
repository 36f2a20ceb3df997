"""Deploy the reference driver on the shared local cluster under a fresh driver name, as a "preinstalled"
driver that `dra-conformance run --cluster existing --driver-deploy preinstalled` can qualify.

Optionally with reference-driver faults (reference_driver/faults.py): the host processes inherit
``DRA_REFERENCE_FAULTS`` from this process while they start.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from conformance.core import names
from conformance.core.profile import parse
from conformance.drivers import profiles
from conformance.drivers.host import HostDeployer
from conformance.k8s.client import K8s

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def reference_driver(local_cluster, tmp: Path, faults: str = ""):
    """Yield ``(profile_path, k8s)``: the reference driver running on every node, a profile YAML for it."""
    suffix = uuid.uuid4().hex[:6]
    base = profiles.load("reference")
    raw = {"name": f"r{suffix}", "driver": f"r{suffix}.dra.test",
           "device_classes": [f"r{suffix}.dra.test"], "devices_per_node": 4,
           "visibility": {"env_regex": base.visibility.env_regex, "image": local_cluster.images["busybox"]},
           "opaque_config": {"parameters": dict(base.opaque_parameters), "shows_as": base.opaque_shows_as},
           "capabilities": dict(base.capabilities)}
    k8s = K8s.from_kubeconfig(local_cluster.kubeconfig)
    deployer = HostDeployer(local_cluster, parse({**raw, "deploy": {"mode": "bundled"}}, source="e2e"), k8s,
                            names.new_run_id(), state_root=tmp / "state")
    saved = os.environ.get("DRA_REFERENCE_FAULTS")
    os.environ["DRA_REFERENCE_FAULTS"] = faults
    try:
        deployer.deploy()
    finally:
        if saved is None:
            os.environ.pop("DRA_REFERENCE_FAULTS", None)
        else:
            os.environ["DRA_REFERENCE_FAULTS"] = saved
    path = tmp / "profile.yaml"
    path.write_text(yaml.safe_dump({**raw, "deploy": {"mode": "preinstalled"}}))
    try:
        yield path, k8s
    finally:
        deployer.teardown()


def start_run(local_cluster, profile: Path, report: Path, *extra: str, run_args: tuple[str, ...] = ("--no-report",),
              test_profile: str = "core") -> subprocess.Popen:
    """Start `dra-conformance run` against the shared cluster; ``extra`` goes to pytest after ``--``."""
    cmd = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--kubeconfig",
           str(local_cluster.kubeconfig), "--driver", str(profile), "--profile", test_profile, "--report-dir",
           str(report), *run_args, "--", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
