"""dra-example-driver installed from its own Helm chart (the chart inside its pinned Go module, the image built
offline) runs as a DaemonSet on every node of a fresh local cluster with DaemonSet paths, registers with every
kubelet and runs a pod with a claim; afterwards nothing of it is left on the host: no mounts, no mount-namespace
holders, no DNAT chain, no standard CDI dirs we created. A whole `dra-conformance run` (its own cluster, slot
picked by the run). About 2 minutes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_lab.local import hostsys

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TESTS = "test_driver_registers_with_every_kubelet or test_pod_with_claim_runs_and_sees_its_device"


def _node_namespaces() -> set[int]:
    """Pids that see a local node's kubelet dir bound at /var/lib/kubelet (holders, kubelets, containerds)."""
    pids = set()
    for info in Path("/proc").glob("[0-9]*/mountinfo"):
        try:
            lines = info.read_text().splitlines()
        except OSError:
            continue
        if any(f.split()[4] == "/var/lib/kubelet" and "/dra-conformance/clusters/" in f.split()[3] for f in lines):
            pids.add(int(info.parent.name))
    return pids


def _host_traces() -> dict:
    return {
        "mounts": [m for m in Path("/proc/mounts").read_text().splitlines() if " /var/lib/kubelet " in m],
        "api_chains": hostsys.iptables_chains(("DRA-API-",)),
        "cdi_dirs": [d for d in ("/run/cdi", "/etc/cdi") if Path(d).exists()],
    }


@pytest.mark.cluster_lifecycle  # its own cluster (the run's), before the shared one starts
def test_example_driver_from_its_chart_passes_and_leaves_nothing(tmp_path):
    # given: the host before the run
    before, namespaces = _host_traces(), _node_namespaces()
    # when: a run deploys dra-example-driver with --driver-deploy helm and runs two node tests
    argv = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "local", "--driver", "dra-example-driver"]
    argv += ["--driver-deploy", "helm", "--profile", "core", "--feature-gates", "all", "--no-report"]
    argv += ["--report-dir", str(tmp_path / "report"), "--", "-k", TESTS]
    proc = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    out = proc.stdout + proc.stderr
    # then: both pass on the chart-deployed driver, and the host looks as before
    assert proc.returncode == 0 and "VERDICT: PASS" in out and "2 passed" in out, out[-4000:]
    assert "deploying driver gpu.example.com (helm)" in out
    assert _host_traces() == before
    assert _node_namespaces() <= namespaces, "processes in a node mount namespace were left"
