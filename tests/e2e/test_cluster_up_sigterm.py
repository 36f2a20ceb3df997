"""SIGTERM during `dra-conformance cluster up` tears down what it started, as Ctrl-C does (issue 27: CI runners and
`timeout` send SIGTERM, not SIGINT): once the cluster's state is recorded and its etcd runs, SIGTERM to the command's
process alone (not its group: `timeout` signals only its child) ends it with exit 2 and leaves no state dir, no
process, mount, bridge or cgroup of the cluster; a second SIGTERM once it says it is tearing down (breaker F5 of
session 12: it used to abort the tear-down) changes nothing of that. About 20 s.

Sources: conformance.core.commands.sigterm_as_interrupt (every command) and signals_deferred;
lab/conformance_lab/local/cluster.py ``up`` (tears down on any exception during bring-up).
"""

from __future__ import annotations

import os
import secrets
import signal
import sys

import pytest
from conformance_lab.local import LocalCluster
from conformance_lab.local.config import Layout
from conformance_lab.local.state import ClusterState
from conformance_lab.local.teardown import leftovers

from tests.e2e.conftest import K8S_VERSION
from tests.e2e.preinstalled import WatchedRun

pytestmark = [pytest.mark.e2e, pytest.mark.cluster_lifecycle]


def _etcd_running(name: str) -> ClusterState | None:
    """The cluster's recorded state once it records a running etcd (None before)."""
    try:
        state = ClusterState.load(name)
    except (FileNotFoundError, ValueError):  # not written yet, or read mid-rename
        return None
    etcd = state.process("etcd")
    return state if etcd is not None and etcd.is_running() else None


def test_sigterm_during_cluster_up_leaves_no_cluster_behind(tmp_path):
    # given: `cluster up` in progress, its state dir recorded and its etcd running
    name = f"sigt{secrets.token_hex(2)}"
    cmd = [sys.executable, "-m", "conformance.cli", "cluster", "up", "--name", name, "--nodes", "1"]
    cmd += ["--no-kube-proxy", "--log-dir", str(tmp_path / "logs")]
    cmd += ["--k8s-version", K8S_VERSION] if K8S_VERSION else []
    with WatchedRun(cmd) as run:
        state = run.wait_until("etcd running in the recorded state", lambda: _etcd_running(name), timeout=300)
        assert "up in" not in run.output, run.tail()  # still bringing up
        # when: SIGTERM to the command's process only, and another once it says it tears down
        os.kill(run.proc.pid, signal.SIGTERM)
        run.wait_until("the tear-down", lambda: "tearing down" in run.output, timeout=60)
        os.kill(run.proc.pid, signal.SIGTERM)  # not reaped before exit_within: a pid that ended is a zombie
        code, took = run.exit_within(120)
    # then: interrupted (exit 2) after tearing down; nothing of the cluster is left
    assert code == 2, run.tail()
    assert "tearing down" in run.output and "interrupted" in run.output, run.tail()
    lay = Layout(name=name, slot=state.slot, nodes=1, log_dir=tmp_path / "logs")  # slot: ports only
    assert leftovers(name, lay, [lay.bridge(0)]) == []
    with pytest.raises(FileNotFoundError):
        LocalCluster.load(name)
    second = "finished it first" in run.output  # False only when the tear-down ended before the 2nd signal
    print(f"exit {code} {took:.1f}s after the 2nd SIGTERM; it came during the tear-down: {second}")
