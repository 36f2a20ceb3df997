"""Faults of a local cluster itself (issue 27 §2): the API server stopped and started again, etcd stopped for a
while, the kubeconfig's credentials revoked, the report directory's disk full.

Each fault is a context manager: entering it breaks the cluster (or the path), leaving it repairs what can be
repaired and waits, bounded, until the API server answers ``/readyz`` again; it repairs also when the body
raises. A revoked credential is not repaired (a ServiceAccount token stays invalid once its ServiceAccount is
deleted): leaving deletes the binding that granted it. A node's network cut pulls the node's cable: its link
on the cluster bridge goes down (each node has a network namespace of its own, netns.py), then up again.

Sources: kube-apiserver ``/readyz`` (its ``etcd`` check); KEP-1205 bound service account tokens (deleting the
ServiceAccount invalidates its tokens: HTTP 401); tmpfs(5) ``size=``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from conformance_lab.local import api as apilib
from conformance_lab.local.state import ClusterState

READY_TIMEOUT = 120.0  # seconds until the API server answers /readyz ok after a repair


def _process(state: ClusterState, name: str):
    proc = state.process(name)
    if proc is None:
        raise KeyError(f"no {name} recorded in cluster {state.name!r}; is it a local cluster that is up?")
    return proc


def wait_ready(api: apilib.Api, timeout: float = READY_TIMEOUT) -> None:
    """Wait until ``api`` answers ``/readyz`` with 200; WaitTimeout with the last answer."""
    apilib.wait_for("kube-apiserver /readyz ok after the fault", lambda: apilib.readyz(api), timeout, interval=0.5)


@contextlib.contextmanager
def component_stopped(state: ClusterState, api: apilib.Api, name: str, crash: bool = False) -> Iterator[None]:
    """``name`` (``kube-apiserver``, ``etcd``, ``kube-scheduler``) stopped while the body runs, started again after
    it (also when it raises) and the API server ready again. ``crash``: SIGKILL, as a panic ends it (a scheduler
    then keeps its leader Lease until it expires). Raises KeyError (no such process), WaitTimeout/WaitFailed."""
    proc = _process(state, name)
    proc.stop(timeout=10.0, graceful=not crash)
    try:
        yield
    finally:
        proc.restart()
        state.save()
        wait_ready(api)


@contextlib.contextmanager
def revocable_kubeconfig(api: apilib.Api, kubeconfig: Path, out: Path, name: str) -> Iterator[Callable[[], dict]]:
    """A kubeconfig at ``out`` with the token of a new ServiceAccount ``name`` (namespace default) bound to
    cluster-admin; yields ``revoke()``, which deletes the ServiceAccount (its tokens then get HTTP 401). At exit
    the ServiceAccount (if still there) and the binding are deleted. Raises RuntimeError naming the failed call."""
    import yaml  # noqa: PLC0415

    def call(method: str, path: str, body: dict | None = None, ok=(200, 201)) -> dict:
        status, text = api.request(method, path, body)
        if status not in ok:
            raise RuntimeError(f"{method} {path} -> {status}: {text[:300]}")
        return json.loads(text) if text.strip().startswith("{") else {}

    sa_path = f"/api/v1/namespaces/default/serviceaccounts/{name}"
    crb_path = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}"
    call("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}})
    try:
        call(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
            },
        )
        token = call("POST", f"{sa_path}/token", {"spec": {"expirationSeconds": 3600}})["status"]["token"]
        doc = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        doc["users"] = [{"name": name, "user": {"token": token}}]
        for ctx in doc.get("contexts") or []:
            ctx["context"]["user"] = name
        out.write_text(yaml.safe_dump(doc), encoding="utf-8")
        yield lambda: call("DELETE", sa_path, ok=(200, 202, 404))
    finally:
        for path in (crb_path, sa_path):
            call("DELETE", path, ok=(200, 202, 404))


@contextlib.contextmanager
def small_disk(mountpoint: Path, size: str = "4m") -> Iterator[Callable[[], int]]:
    """A tmpfs of ``size`` mounted at ``mountpoint`` (created) for the body; yields ``fill()``, which writes a
    file until the disk is full. Unmounted (lazily if busy) and removed at exit. Needs root (mount(8));
    raises RuntimeError with mount's message."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mount tmpfs on {mountpoint}: {done.stderr.strip()} (needs root)")
    try:
        yield lambda: _fill(mountpoint / ".filler")
    finally:
        subprocess.run(["umount", str(mountpoint)], capture_output=True, check=False)
        if subprocess.run(["mountpoint", "-q", str(mountpoint)], check=False).returncode == 0:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            mountpoint.rmdir()


def _fill(path: Path) -> int:
    """Append to ``path`` until ENOSPC; returns the bytes written."""
    written = 0
    with contextlib.suppress(OSError), path.open("ab") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
            written += 65536
    return written


def pause(seconds: float) -> None:
    """Keep a fault in place for ``seconds`` (its duration, e.g. etcd stopped for 30 s: not a wait for luck)."""
    time.sleep(seconds)


@contextlib.contextmanager
def node_network_cut(state: ClusterState, api: apilib.Api, node: str) -> Iterator[None]:
    """``node``'s cable pulled while the body runs: its veth end on the cluster bridge (``vn<i>`` in the cluster
    namespace, netns.py) set down, so the node's ``eth0`` loses its carrier (its kubelet, kube-proxy and pods
    reach nothing off the node; its routes stay); set up again after the body (also when it raises) and the
    node Ready again. Raises KeyError (unknown node, a cluster without namespaces), RuntimeError (``ip``),
    WaitTimeout."""
    from conformance_lab.local import netns  # noqa: PLC0415

    holder = _process(state, netns.CLUSTER_HOLDER)
    nodes = [f"{state.name}-node-{i}" for i in range(state.nodes)]
    if node not in nodes:
        raise KeyError(f"no node {node!r} in local cluster {state.name!r}; nodes: {nodes}")
    link = netns.peer_link(nodes.index(node))
    netns.ip_batch(holder.pid, [f"link set {link} down"])
    try:
        yield
    finally:
        netns.ip_batch(holder.pid, [f"link set {link} up"])
        apilib.wait_for(
            f"node {node} Ready after its network came back",
            lambda: apilib.nodes_ready(api, [node]),
            READY_TIMEOUT,
            interval=0.5,
        )
