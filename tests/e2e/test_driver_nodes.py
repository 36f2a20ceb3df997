"""Issue 24 acceptance: a reference-driver DaemonSet (its Helm chart) that asks for both nodes of a local
cluster but serves only one (fault ``publishes-on-some-nodes-only``: the plugin on ``<cluster>-node-1``
registers but publishes nothing) fails KEP5970-1 and KEP5970-2 naming the other node, and run.json records the
expected driver nodes taken from the DaemonSet. A whole `dra-conformance run` (its own cluster). About 3 minutes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TESTS = "test_driver_registers_with_every_kubelet or test_driver_publishes_slices_with_devices"


@pytest.mark.slow  # its own cluster (the run's, a free slot), started after the shared one (which owns kube-proxy)
def test_daemonset_serving_one_node_of_two_fails_kep5970_1_naming_the_other(tmp_path):
    # given: the reference chart's DaemonSet on a two-node cluster, the plugin on node-1 publishing nothing
    env = {**os.environ, "PYTHONPATH": str(REPO), "DRA_REFERENCE_FAULTS": "publishes-on-some-nodes-only"}
    argv = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "local", "--driver", "reference"]
    argv += ["--driver-deploy", "helm", "--profile", "core", "--feature-gates", "all", "--no-report"]
    argv += ["--workers", "0", "--report-dir", str(tmp_path / "report"), "--", "-k", TESTS]
    # when: KEP5970-1 and KEP5970-2 run
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    out = proc.stdout + proc.stderr
    # then: both fail, naming node-1 as the node the DaemonSet asks for and the driver does not serve
    assert proc.returncode == 1 and "VERDICT: FAIL" in out and "2 failed" in out, out[-4000:]
    named = re.findall(r"the driver shows no devices on node\(s\) \['([\w-]+-node-1)'\]", out)
    assert len(set(named)) == 1 and len(named) >= 2, out[-4000:]
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    expected = run["expected_nodes"]
    assert expected["known"] and named[0] in expected["nodes"] and len(expected["nodes"]) == 2, expected
    assert "DaemonSet" in expected["source"], expected
