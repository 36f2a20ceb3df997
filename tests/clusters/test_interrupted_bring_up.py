"""An interrupted `cluster up` leaves nothing no tear-down knows about (breaker F5 of session 12): a SIGTERM
between spawning a component and recording it waits for the record, a second one during the tear-down waits for
its end (then the command exits as interrupted), a tear-down that cannot finish names `cluster down`, and the
tear-down's last process step kills what no state records but names the cluster's directories. Real processes
and signals; the tear-down itself is replaced where it would touch the host (cgroups, iptables)."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from conformance_lab.local import cluster as clusterlib
from conformance_lab.local import config as configlib
from conformance_lab.local import state as statelib
from conformance_lab.local.bringup import BringUp
from conformance_lab.local.processes import HostProcess, _ancestors, strays
from conformance_lab.local.teardown import TeardownError

from conformance.core import commands


@pytest.fixture
def made(tmp_path, monkeypatch):
    """A LocalCluster ``f5x`` and its recorded state, both under tmp_path; its progress lines in ``said``."""
    monkeypatch.setattr(statelib, "STATE_ROOT", tmp_path / "state")
    cfg = configlib.LocalClusterConfig(name="f5x", nodes=1, slot=7, log_dir=tmp_path / "logs")
    said: list[str] = []
    cluster = clusterlib.LocalCluster(cfg, progress=said.append)
    state = statelib.ClusterState(name="f5x", slot=7, nodes=1, log_dir=str(tmp_path / "logs"))
    state.save()
    yield cluster, state, said
    for proc in state.processes:
        proc.stop(timeout=1)


def test_a_sigterm_right_after_a_spawn_waits_until_the_process_is_recorded(made, monkeypatch):
    # given: SIGTERM arrives the moment the component's process exists, before its record
    cluster, state, _ = made
    real_spawn = HostProcess.spawn

    def spawn_then_sigterm(*args, **kwargs):
        proc = real_spawn(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return proc

    monkeypatch.setattr(HostProcess, "spawn", spawn_then_sigterm)
    # when: `cluster up` spawns it (SIGTERM raises KeyboardInterrupt, as in every command)
    with commands.sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        BringUp(cluster.config, cluster.layout, state, print).spawn("kube-proxy", "f5x-worker", ["sleep", "60"])
    # then: the interrupt came after the record, in memory and on disk, so tear-down stops it
    assert [p.name for p in state.processes] == ["kube-proxy"] and state.processes[0].is_running()
    assert statelib.ClusterState.load("f5x").process("kube-proxy", "f5x-worker").pid == state.processes[0].pid


def test_a_second_sigterm_during_the_tear_down_waits_for_its_end(made, monkeypatch):
    # given: the tear-down of a failed bring-up, and a second SIGTERM in the middle of it
    cluster, state, said = made
    steps = []

    def teardown(_state):
        steps.append("started")
        os.kill(os.getpid(), signal.SIGTERM)
        steps.append("finished")

    monkeypatch.setattr(clusterlib, "teardown", teardown)
    # when / then: the tear-down finishes, says so, and then the command is interrupted
    with commands.sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        cluster._teardown(state)
    assert steps == ["started", "finished"]
    assert any("SIGTERM during the tear-down: finished it first, now exiting as interrupted" in s for s in said), said


def test_a_tear_down_that_cannot_finish_names_cluster_down(made, monkeypatch):
    cluster, state, said = made

    def teardown(_state):
        raise TeardownError("f5x", ["mounts could not be removed: ['/x']"])

    monkeypatch.setattr(clusterlib, "teardown", teardown)
    cluster._teardown(state)  # reported, not raised: the bring-up's own error follows
    line = said[-1]
    assert "tear-down did not finish: tear-down of local cluster 'f5x' left: mounts could not be removed" in line
    assert line.endswith("run `dra-conformance cluster down --name f5x` to remove what is left"), line


def test_strays_are_processes_naming_the_cluster_dirs_except_the_admin_kubeconfig(tmp_path):
    # given: an unrecorded component of cluster dir d, a kubectl-like process of d's admin kubeconfig, and a
    # component of another cluster whose name starts the same (d2)
    d, other = tmp_path / "clusters" / "dra", tmp_path / "clusters" / "dra2"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    component = HostProcess.spawn("kube-proxy", "", [*sleeper, f"--config={d}/kube-proxy-0.yaml"], tmp_path / "a")
    kubectl = HostProcess.spawn("kubectl", "", [*sleeper, "--kubeconfig", f"{d}/admin.kubeconfig"], tmp_path / "b")
    neighbour = HostProcess.spawn("etcd", "", [*sleeper, f"--data-dir={other}/etcd"], tmp_path / "c")
    try:
        # when / then: only the first is a stray of d; d2's is d2's
        assert strays(d, tmp_path / "run" / "dra") == [component.pid]
        assert strays(other) == [neighbour.pid]
    finally:
        for proc in (component, kubectl, neighbour):
            proc.stop(timeout=1)


def test_this_process_and_its_parents_are_never_strays():
    assert {os.getpid(), os.getppid()} <= _ancestors() and 1 not in _ancestors()


def test_after_an_interrupted_bring_ups_tear_down_further_signals_are_ignored(made, monkeypatch):
    """Breaker s13 B8: Ctrl-C held down during `cluster up` sent SIGINTs after "now exiting as interrupted" that
    killed the interpreter on its way out (exit 130, not 2). After the tear-down of an interrupted bring-up
    SIGINT and SIGTERM stay ignored (also past `sigterm_as_interrupt`'s end), and a signal noted during it still
    ends the command as interrupted; a bring-up that failed otherwise keeps its handlers."""
    cluster, state, said = made
    monkeypatch.setattr(clusterlib, "teardown", lambda _state: os.kill(os.getpid(), signal.SIGINT))
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(KeyboardInterrupt), commands.sigterm_as_interrupt():
            cluster._teardown(state, interrupted=True)
        assert {sig: signal.getsignal(sig) for sig in before} == dict.fromkeys(before, signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGINT)  # held Ctrl-C: nothing happens any more
        os.kill(os.getpid(), signal.SIGTERM)
        assert any("SIGINT during the tear-down" in s for s in said), said
        for sig, handler in before.items():
            signal.signal(sig, handler)
        monkeypatch.setattr(clusterlib, "teardown", lambda _state: None)
        cluster._teardown(state)  # not interrupted: the handlers are left as they were
        assert {sig: signal.getsignal(sig) for sig in before} == before
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
