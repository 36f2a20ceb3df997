"""Ctrl-C during driver deployment, end to end: `dra-conformance run --cluster local` brings up its own cluster and
starts the reference driver in host mode with fault ``no-slices`` (reference_driver/faults.py), so the deployer
sits in its bounded readiness wait (scaled to 10 min) for slices that never come. SIGINT once the run printed
that it deploys and a driver process runs on every node must end the run promptly with exit 2 and VERDICT:
INTERRUPTED, leaving no driver process, no cluster process, mount or directory, and no state file.

Sources: issue 10 (flaky interrupt test; Ctrl-C during a wait, during deployment, during tear-down).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conformance_lab.local import LocalCluster
from conformance_lab.local.config import Layout
from conformance_lab.local.processes import processes_matching
from conformance_lab.local.provider import cluster_name as local_cluster_name
from conformance_lab.local.teardown import leftovers

from conformance.runner.session import STATE_FILE
from tests.e2e.preinstalled import WatchedRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
HELD = Path(__file__).parent / "interrupt_suite" / "held.py"
NODES = 2


def test_ctrl_c_during_driver_deployment_stops_driver_and_cluster(tmp_path):
    # given: a run whose driver starts on every node but never publishes a slice
    report = tmp_path / "report"
    driver_state = str(report / "driver-state")  # in each driver process's argv (--state-dir)
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--cluster",
        "local",
        "--nodes",
        str(NODES),
        "--driver",
        "reference",
        "--profile",
        "core",
        "--timeout-scale",
        "10",
        "--report-dir",
        str(report),
        "--no-report",
        "--workers",
        "0",  # serial, as this test was written (Ctrl-C during the controller's deployment)
        "--",
        str(HELD),
    ]
    with WatchedRun(cmd, env={"DRA_REFERENCE_FAULTS": "no-slices"}) as run:
        # when: it deploys (printed) and a driver process runs for every node, Ctrl-C
        run.wait_until("'deploying driver'", lambda: "deploying driver" in run.output, timeout=600)
        run.wait_until(f"{NODES} driver processes", lambda: len(processes_matching(driver_state)) >= NODES, 120)
        assert "driver ready" not in run.output, run.tail()
        code, took = run.ctrl_c(within=60)
    # then: interrupted promptly; driver, cluster and state file are gone
    assert code == 2 and "VERDICT: INTERRUPTED" in run.output, run.tail()
    name = local_cluster_name(run.run_id)
    assert f"cluster {name!r} torn down" in run.output, run.tail()
    assert processes_matching(driver_state) == []
    lay = Layout(name=name, slot=0, nodes=NODES, log_dir=report / "cluster-logs")  # slot: ports only
    assert leftovers(name, lay, [lay.bridge(i) for i in range(NODES)]) == []
    with pytest.raises(FileNotFoundError):
        LocalCluster.load(name)
    assert not (report / STATE_FILE).exists()
    print(f"exit {code} {took:.1f}s after Ctrl-C")
