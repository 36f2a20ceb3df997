"""The privileged helper pods of ``--node-access privileged-pod`` and their namespace are deleted even when the process
that started them is killed with SIGKILL (issue 27 §4, breaker finding 6): a child process starts the real
HelperPodNodeAccess on the shared local cluster, with the reference-driver image (Python) as the gRPC relay, a short
heartbeat window (and a hard deadline far beyond the test), keeps them alive through its heartbeat for longer than
that window, and is SIGKILLed; the anchor pod then sees the heartbeat stop and deletes the helper namespace with its
own one-namespace permission (a Role + RoleBinding inside that namespace); the namespace controller removes the
pods, the Job, the Role and the binding, with no process of the run alive and no sweep. No fixed sleep: the test
waits for the anchor to have run longer than the window (its container's ``startedAt``) while the pods stay, then
for the objects to go. About 110 s before issue 26 §3 (50 s sleep, 30 s window; pods gone 35 s and 32 s after
SIGKILL)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime

import pytest
from conformance_lab.local.images import import_into_nodes
from conformance_lab.toolchain.images import catalog

from conformance import images as refs
from conformance.clusters.existing import pinned
from conformance.core import names
from conformance.k8s import discovery, sweep, waits
from conformance.k8s.client import K8s
from conformance.node import heartbeat
from conformance.node.helper_pod import ANCHOR

pytestmark = pytest.mark.e2e
DEADLINE = 3600  # seconds: the hard bound, never reached here (the heartbeat must end them)
STALE, INTERVAL = 20, 2  # seconds: the heartbeat window and the renewal period (ten renewals per window)
MARGIN = heartbeat.POLL + 15  # seconds the anchor must outlive the window by: its poll, its start, the deletion

CHILD = textwrap.dedent(
    """
    import signal, sys
    from conformance.k8s.client import K8s
    from conformance.node.helper_pod import HelperPodNodeAccess
    kubeconfig, run_id, image, relay, deadline, stale, interval, *nodes = sys.argv[1:]
    k8s = K8s.from_kubeconfig(kubeconfig)
    access = HelperPodNodeAccess(
        k8s, nodes, run_id, image, relay, deadline=int(deadline), stale=int(stale), interval=float(interval)
    )
    access.start()
    print(access.failure or "started", flush=True)
    print(access.lifetime, flush=True)
    signal.pause()  # a run in progress, until killed
    """
)


def _start_helpers(cluster, run_id: str) -> subprocess.Popen:
    """A child process holding helper pods on every node of ``cluster`` (module docstring)."""
    archives = [spec.build() for spec in catalog.select(["busybox", "reference-driver"])]
    import_into_nodes(cluster.name, archives, say=lambda line: None)  # again: the shared cluster may be older code's
    k8s, wanted = K8s.from_kubeconfig(str(cluster.kubeconfig)), [cluster.images["busybox"], refs.reference_driver_ref()]

    def pins() -> list[str]:  # pinned by the digest every node reports (imported with --digests)
        found = [pinned(discovery.nodes(k8s), ref) for ref in wanted]
        return found if all("@sha256:" in ref for ref in found) else []

    # the kubelet lists new images in Node.status.images within its image-list refresh (~30 s)
    assert waits.poll(pins, timeout=120, interval=5, scale=False), f"no digest reported by every node for {wanted}"
    busybox, relay = pins()  # Python + grpcio: the relay and the reaper
    argv = [str(cluster.kubeconfig), run_id, busybox, relay, str(DEADLINE), str(STALE), str(INTERVAL)]
    argv += [n.name for n in cluster.nodes]
    return subprocess.Popen([sys.executable, "-c", CHILD, *argv], stdout=subprocess.PIPE, text=True)


def _helpers(k8s: K8s, run_id: str) -> list:
    selector = f"{names.RUN_LABEL}={names.label_value(run_id)}"
    return [p for p in k8s.list("Pod", None, label_selector=selector) if p.name.startswith("helper-")]


def _outlived_the_window(k8s: K8s, run_id: str, job, pods) -> bool:
    """True once the anchor pod of ``job`` (run ``run_id``) has run longer than STALE + MARGIN seconds (by its
    container's ``startedAt``, the node's clock: this host's on a local cluster); AssertionError at once if it or a
    helper pod of ``pods`` ended."""
    anchor = k8s.list("Pod", job.namespace, label_selector=f"{heartbeat.JOB_UID_LABEL}={job.uid}")
    alive = sorted(p.name for p in _helpers(k8s, run_id))
    assert alive == sorted(p.name for p in pods), f"helper pods ended while the run beats: {alive}"
    states = [(c.get("state") or {}) for p in anchor for c in p.get("status.containerStatuses") or []]
    assert len(anchor) == 1 and not any("terminated" in s for s in states), [p.get("status") for p in anchor]
    started = [s["running"]["startedAt"] for s in states if "running" in s]
    if not started:
        return False
    return time.time() - datetime.fromisoformat(started[0].replace("Z", "+00:00")).timestamp() > STALE + MARGIN


def test_helper_pods_and_their_namespace_are_deleted_after_the_run_is_sigkilled(local_cluster):
    """Helper pods are owned by a Job whose pod deletes their namespace when the run's heartbeat stops: while the
    run lives they stay past the heartbeat window; after SIGKILL the namespace, the pods, the Job and the anchor's
    Role and RoleBinding (in the namespace) are gone within the window plus the controllers' reaction, with no
    sweep, long before their activeDeadlineSeconds.
    Source: issue 27 §4; breaker finding 6; batch/v1 JobSpec (KEP-592); downward API volume; RBAC resourceNames;
    kubernetes/kubernetes#134929 (a namespaced Role on its own Namespace)."""
    # given: a process holding running helper pods on every node, owned by the anchor Job, beating
    k8s, run_id = K8s.from_kubeconfig(str(local_cluster.kubeconfig)), f"r20000101-0000-{secrets.token_hex(2)}"
    child = _start_helpers(local_cluster, run_id)
    try:
        said, lifetime = child.stdout.readline().strip(), child.stdout.readline().strip()
        pods = _helpers(k8s, run_id)
        assert said == "started" and len(pods) == len(local_cluster.nodes), (said, [p.name for p in pods])
        assert f"they end about {STALE} s after its last heartbeat with their namespace" in lifetime, lifetime
        assert "not pinned" not in lifetime and "@sha256:" in pods[0].get("spec.containers")[0]["image"], lifetime
        assert all(p.get("spec.activeDeadlineSeconds") == DEADLINE for p in pods), [p.get("spec") for p in pods]
        assert {r["name"] for p in pods for r in p.get("metadata.ownerReferences")} == {ANCHOR}
        namespace = k8s.get("Namespace", pods[0].namespace)
        job = k8s.get("Job", ANCHOR, namespace.name)
        role = k8s.get("Role", "dra-conformance-reaper", namespace.name)
        binding = k8s.get("RoleBinding", role.name, namespace.name)
        assert not k8s.list("ClusterRole", None, label_selector=f"{names.RUN_LABEL}={names.label_value(run_id)}")
        # the heartbeat keeps them: alive past the window (renewals reach the anchor through the downward API)
        outlived = waits.poll(lambda: _outlived_the_window(k8s, run_id, job, pods), timeout=STALE + 120, interval=2)
        assert outlived, f"the anchor of {namespace.name} did not run {STALE + MARGIN} s within {STALE + 120} s"
        # when: the process is killed with SIGKILL (no handler, no cleanup of its own)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
        killed = time.monotonic()
        # then: the namespace and everything of the run are deleted by the cluster alone, within the window + 2 min
        for obj in [namespace, *pods, job, role, binding]:
            waits.object_gone(k8s, obj, timeout=STALE + 120)
        print(f"helper namespace, pods, anchor Job and its role gone {time.monotonic() - killed:.0f} s after SIGKILL")
        assert sweep.labelled(k8s, run_id) == []
    finally:
        if child.poll() is None:
            child.kill()
        sweep.sweep_run(k8s, run_id)  # only after a failure above: what `dra-conformance cleanup --run-id` does
