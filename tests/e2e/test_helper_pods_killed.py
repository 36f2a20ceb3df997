"""The privileged helper pods of ``--node-access privileged-pod`` are deleted even when the process that started them
is killed with SIGKILL (issue 27 §4): a child process starts the real HelperPodNodeAccess on the shared local
cluster with a short deadline and is SIGKILLed while they run; the kubelet, the Job controller, the
TTL-after-finished controller and the garbage collector then remove them with no process of the run alive. Left:
the empty helper namespace, which the run-label sweep (``dra-conformance cleanup``) removes. About 2 minutes."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap

import pytest

from conformance.core import names
from conformance.k8s import sweep, waits
from conformance.k8s.client import K8s
from conformance.node.helper_pod import ANCHOR

pytestmark = pytest.mark.e2e
DEADLINE = 60  # seconds: long enough for the helper pods to start on a loaded 2-core host

CHILD = textwrap.dedent(
    """
    import signal, sys
    from conformance.k8s.client import K8s
    from conformance.node.helper_pod import HelperPodNodeAccess
    kubeconfig, run_id, image, deadline, *nodes = sys.argv[1:]
    access = HelperPodNodeAccess(K8s.from_kubeconfig(kubeconfig), nodes, run_id, image, deadline=int(deadline))
    access.start()
    print(access.failure or "started", flush=True)
    signal.pause()  # a run in progress, until killed
    """
)


def _start_helpers(cluster, run_id: str) -> subprocess.Popen:
    """A child process holding helper pods on every node of ``cluster`` (module docstring)."""
    argv = [str(cluster.kubeconfig), run_id, cluster.images["busybox"], str(DEADLINE)]
    argv += [n.name for n in cluster.nodes]
    return subprocess.Popen([sys.executable, "-c", CHILD, *argv], stdout=subprocess.PIPE, text=True)


def _helpers(k8s: K8s, run_id: str) -> list:
    selector = f"{names.RUN_LABEL}={names.label_value(run_id)}"
    return [p for p in k8s.list("Pod", None, label_selector=selector) if p.name.startswith("helper-")]


def test_helper_pods_are_deleted_after_the_run_is_sigkilled(local_cluster):
    """Helper pods carry activeDeadlineSeconds and are owned by a Job with the same deadline and
    ttlSecondsAfterFinished 0: after SIGKILL they are gone within the deadline plus the controllers' reaction.
    Source: issue 27 §4; batch/v1 JobSpec activeDeadlineSeconds, ttlSecondsAfterFinished (KEP-592)."""
    # given: a process holding running helper pods on every node, owned by the anchor Job
    k8s, run_id = K8s.from_kubeconfig(str(local_cluster.kubeconfig)), f"r20000101-0000-{secrets.token_hex(2)}"
    child = _start_helpers(local_cluster, run_id)
    try:
        said = child.stdout.readline().strip()
        pods = _helpers(k8s, run_id)
        assert said == "started" and len(pods) == len(local_cluster.nodes), (said, [p.name for p in pods])
        assert all(p.get("spec.activeDeadlineSeconds") == DEADLINE for p in pods), [p.get("spec") for p in pods]
        assert {r["name"] for p in pods for r in p.get("metadata.ownerReferences")} == {ANCHOR}
        # when: the process is killed with SIGKILL (no handler, no cleanup of its own)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
        # then: the helper pods and the anchor Job are deleted by the cluster alone, within the deadline + 2 min
        for obj in [*pods, k8s.get("Job", ANCHOR, pods[0].namespace)]:
            waits.object_gone(k8s, obj, timeout=DEADLINE + 120)
        left = sorted(o.ref for o in sweep.labelled(k8s, run_id))
        assert left == [f"Namespace {pods[0].namespace}"], left
    finally:
        if child.poll() is None:
            child.kill()
        sweep.sweep_run(k8s, run_id)  # what `dra-conformance cleanup --run-id` does: the empty namespace
    assert sweep.labelled(k8s, run_id) == []
