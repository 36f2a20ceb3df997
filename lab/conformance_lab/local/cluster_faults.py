"""Faults of a local cluster itself (issue 27 §2): the API server stopped and started again, etcd stopped for a
while, the kubeconfig's credentials revoked, the report directory's disk full.

Each fault is a context manager: entering it breaks the cluster (or the path), leaving it repairs what can be
repaired and waits, bounded, until the API server answers ``/readyz`` again; it repairs also when the body
raises. A revoked credential is not repaired (a ServiceAccount token stays invalid once its ServiceAccount is
deleted): leaving deletes the binding that granted it. A node's network cut needs a network namespace per node,
which local clusters do not have yet (nodes share the host network): there is no such fault here.

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
def component_stopped(state: ClusterState, api: apilib.Api, name: str) -> Iterator[None]:
    """``name`` (``kube-apiserver`` or ``etcd``) stopped while the body runs, started again after it (also when
    it raises) and the API server ready again. Raises KeyError (no such process), WaitTimeout/WaitFailed."""
    proc = _process(state, name)
    proc.stop(timeout=10.0)
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
