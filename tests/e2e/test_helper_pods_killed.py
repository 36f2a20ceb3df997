"""The privileged helper pods of ``--node-access privileged-pod`` are deleted even when the process that started them
is killed with SIGKILL (issue 27 §4, breaker finding 6): a child process starts the real HelperPodNodeAccess on the
shared local cluster with a short heartbeat window (and a hard deadline far beyond the test), keeps them alive
through its heartbeat for longer than that window, and is SIGKILLed; the anchor pod then sees the heartbeat stop
and exits, and the Job controller, the TTL-after-finished controller and the garbage collector remove the Job and
the helper pods with no process of the run alive. Left: the empty helper namespace, which the run-label sweep
(``dra-conformance cleanup``) removes. About 100 s (2 runs: 96 s, 94 s; gone 35 s and 32 s after SIGKILL)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conformance.core import names
from conformance.k8s import sweep, waits
from conformance.k8s.client import K8s
from conformance.node import heartbeat
from conformance.node.helper_pod import ANCHOR

pytestmark = pytest.mark.e2e
DEADLINE = 3600  # seconds: the hard bound, never reached here (the heartbeat must end them)
STALE, INTERVAL = 30, 5  # seconds: the heartbeat window and the renewal period
ALIVE = 50  # seconds the run lives with its helper pods before SIGKILL: more than STALE (renewals must arrive)

CHILD = textwrap.dedent(
    """
    import signal, sys
    from conformance.k8s.client import K8s
    from conformance.node.helper_pod import HelperPodNodeAccess
    kubeconfig, run_id, image, deadline, stale, interval, *nodes = sys.argv[1:]
    k8s = K8s.from_kubeconfig(kubeconfig)
    access = HelperPodNodeAccess(
        k8s, nodes, run_id, image, deadline=int(deadline), stale=int(stale), interval=float(interval)
    )
    access.start()
    print(access.failure or "started", flush=True)
    print(access.lifetime, flush=True)
    signal.pause()  # a run in progress, until killed
    """
)


def _start_helpers(cluster, run_id: str) -> subprocess.Popen:
    """A child process holding helper pods on every node of ``cluster`` (module docstring)."""
    argv = [str(cluster.kubeconfig), run_id, cluster.images["busybox"], str(DEADLINE), str(STALE), str(INTERVAL)]
    argv += [n.name for n in cluster.nodes]
    return subprocess.Popen([sys.executable, "-c", CHILD, *argv], stdout=subprocess.PIPE, text=True)


def _helpers(k8s: K8s, run_id: str) -> list:
    selector = f"{names.RUN_LABEL}={names.label_value(run_id)}"
    return [p for p in k8s.list("Pod", None, label_selector=selector) if p.name.startswith("helper-")]


def test_helper_pods_are_deleted_after_the_run_is_sigkilled(local_cluster):
    """Helper pods are owned by a Job whose pod exits when the run's heartbeat stops (ttlSecondsAfterFinished 0,
    backoffLimit 0): while the run lives they stay past the heartbeat window; after SIGKILL they are gone within
    the window plus the controllers' reaction, long before their activeDeadlineSeconds.
    Source: issue 27 §4; breaker finding 6; batch/v1 JobSpec (KEP-592); downward API volume."""
    # given: a process holding running helper pods on every node, owned by the anchor Job, beating
    k8s, run_id = K8s.from_kubeconfig(str(local_cluster.kubeconfig)), f"r20000101-0000-{secrets.token_hex(2)}"
    child = _start_helpers(local_cluster, run_id)
    try:
        said, lifetime = child.stdout.readline().strip(), child.stdout.readline().strip()
        pods = _helpers(k8s, run_id)
        assert said == "started" and len(pods) == len(local_cluster.nodes), (said, [p.name for p in pods])
        assert f"they end about {STALE} s after its last heartbeat" in lifetime, lifetime
        assert all(p.get("spec.activeDeadlineSeconds") == DEADLINE for p in pods), [p.get("spec") for p in pods]
        assert {r["name"] for p in pods for r in p.get("metadata.ownerReferences")} == {ANCHOR}
        job = k8s.get("Job", ANCHOR, pods[0].namespace)
        # the heartbeat keeps them: alive past the window (renewals reach the anchor through the downward API)
        time.sleep(ALIVE)
        assert sorted(p.name for p in _helpers(k8s, run_id)) == sorted(p.name for p in pods)
        anchor = k8s.list("Pod", pods[0].namespace, label_selector=f"{heartbeat.JOB_UID_LABEL}={job.uid}")
        assert [p.get("status.phase") for p in anchor] == ["Running"], [p.get("status") for p in anchor]
        # when: the process is killed with SIGKILL (no handler, no cleanup of its own)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
        killed = time.monotonic()
        # then: the helper pods and the anchor Job are deleted by the cluster alone, within the window + 2 min
        for obj in [*pods, job]:
            waits.object_gone(k8s, obj, timeout=STALE + 120)
        print(f"helper pods and anchor Job gone {time.monotonic() - killed:.0f} s after SIGKILL")
        left = sorted(o.ref for o in sweep.labelled(k8s, run_id))
        assert left == [f"Namespace {pods[0].namespace}"], left
    finally:
        if child.poll() is None:
            child.kill()
        sweep.sweep_run(k8s, run_id)  # what `dra-conformance cleanup --run-id` does: the empty namespace
    assert sweep.labelled(k8s, run_id) == []
