"""The reference driver deployed on a local cluster under a fresh driver name, described as a "preinstalled"
driver that `dra-conformance run --cluster existing --driver-deploy preinstalled` can qualify: the lab's tools
(cluster faults) and the project's e2e tests (tests/e2e/preinstalled.py) share this one copy.

Optionally with reference-driver faults (reference_driver/faults.py): the host processes inherit
``DRA_REFERENCE_FAULTS`` from this process while they start.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import yaml

from conformance.core import names
from conformance.core.profile import parse
from conformance.drivers import profiles
from conformance.drivers.host import HostDeployer
from conformance.k8s.client import K8s


@contextlib.contextmanager
def reference_driver(cluster, tmp: Path, faults: str = "", source: str = "preinstalled") -> Iterator[tuple[Path, K8s]]:
    """Yield ``(profile_path, k8s)``: the reference driver running as host processes on every node of the local
    cluster handle ``cluster``, and a preinstalled profile YAML for it (in ``tmp``; its stem is the profile
    name). ``faults``: comma-separated reference-driver faults. The processes are stopped at exit. Raises what
    HostDeployer.deploy raises (a DriverError naming the node whose plugin did not register)."""
    suffix = uuid.uuid4().hex[:6]
    base = profiles.load("reference")
    raw = {
        "name": f"r{suffix}",
        "driver": f"r{suffix}.dra.test",
        "device_classes": [f"r{suffix}.dra.test"],
        "devices_per_node": 4,
        "visibility": {"env_regex": base.visibility.env_regex, "image": cluster.images["busybox"]},
        "opaque_config": {
            "parameters": dict(base.opaque_parameters),
            "shows_as": base.opaque_shows_as,
            "override": {"parameters": dict(base.opaque_override), "shows_as": base.opaque_override_shows_as},
        },
        "capabilities": dict(base.capabilities),
    }
    k8s = K8s.from_kubeconfig(cluster.kubeconfig)
    profile = parse({**raw, "deploy": {"mode": "bundled"}}, source=source)
    deployer = HostDeployer(cluster, profile, k8s, names.new_run_id(), state_root=tmp / "state")
    saved = os.environ.get("DRA_REFERENCE_FAULTS")
    os.environ["DRA_REFERENCE_FAULTS"] = faults
    try:
        deployer.deploy()
    finally:
        if saved is None:
            os.environ.pop("DRA_REFERENCE_FAULTS", None)
        else:
            os.environ["DRA_REFERENCE_FAULTS"] = saved
    path = tmp / f"{raw['name']}.yaml"  # a profile's name is its file stem (profiles.check_file)
    # the harness did not start these host processes and finds no DaemonSet: name the driver nodes (every node)
    path.write_text(yaml.safe_dump({**raw, "deploy": {"mode": "preinstalled", "node_selector": {}}}))
    try:
        yield path, k8s
    finally:
        deployer.teardown()
