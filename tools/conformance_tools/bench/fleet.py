"""The benchmark's fleet: kwok fake nodes (``<cluster>-kwok-<i>``, lab/conformance_lab/local/kwok.py, plus the
classic extended resource ``example.com/gpu`` in their status) and the reference driver's fleet process
(``python -m reference_driver.fleet``) that publishes one pool per fake node. Everything here is removed by
:func:`remove_fleet_objects` and :meth:`FleetProcess.stop`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance_lab.local.kwok import fake_node

from conformance.core import errors
from conformance.k8s.client import K8s
from conformance_tools.bench import workload

REPO = Path(__file__).resolve().parents[2]
NODE_SELECTOR = "dra-conformance.test/node=kwok"


def _ready(node: dict) -> bool:
    conds = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def add_fake_nodes(k8s: K8s, cluster: str, count: int, devices: int, timeout: float = 300.0) -> list[str]:
    """Make fake nodes ``<cluster>-kwok-0..count-1`` exist, each exposing ``devices`` as ``example.com/gpu``,
    and wait until kwok reports them Ready; returns their names. Raises WaitTimeout naming the nodes not
    Ready."""
    have = {n.name: n.raw for n in k8s.list("Node", label_selector=NODE_SELECTOR)}
    names = [f"{cluster}-kwok-{i}" for i in range(count)]
    patch = workload.extended_resource_patch(devices)

    def make(name: str) -> None:
        if name not in have:
            node = fake_node(name)
            for key in ("capacity", "allocatable"):
                node["status"][key].update(patch["status"][key])
            try:
                k8s.create(node)
            except errors.AlreadyExists:
                pass
        if (have.get(name, {}).get("status", {}).get("allocatable") or {}).get(workload.EXTENDED_RESOURCE) is None:
            k8s.patch("Node", name, patch, subresource="status")

    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="nodes")
    try:
        list(pool.map(make, names))
    finally:  # Ctrl-C: queued creates are dropped
        pool.shutdown(wait=True, cancel_futures=True)
    t0, missing = time.monotonic(), names
    while missing:
        ready = {n.name for n in k8s.list("Node", label_selector=NODE_SELECTOR) if _ready(n.raw)}
        missing = [n for n in names if n not in ready]
        if missing and time.monotonic() - t0 > timeout:
            raise errors.WaitTimeout(f"{len(names)} kwok nodes Ready", timeout, f"not Ready: {missing[:5]}")
        if missing:
            time.sleep(0.5)
    return names


class FleetProcess:
    """The reference driver's fleet mode as a child process (own session: a terminal Ctrl-C reaches only us;
    :meth:`stop` ends it with SIGTERM, which makes it delete its slices)."""

    def __init__(self, kubeconfig: Path, devices: int, driver: str, log_path: Path) -> None:
        self.kubeconfig, self.devices, self.driver, self.log_path = kubeconfig, devices, driver, log_path
        self.proc: subprocess.Popen | None = None

    def start(self) -> FleetProcess:
        """Start the fleet; returns self."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        argv = [sys.executable, "-m", "reference_driver.fleet", "--kubeconfig", str(self.kubeconfig)]
        argv += ["--node-selector", NODE_SELECTOR, "--devices", str(self.devices), "--driver-name", self.driver]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO, start_new_session=True
            )
        return self

    def tail(self, lines: int = 15) -> str:
        """The end of the fleet's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_published(self, k8s: K8s, nodes: list[str], timeout: float = 300.0) -> int:
        """Wait until every node in ``nodes`` has a slice of the driver; returns the slice count. Raises
        ClusterUnavailable with the fleet's log when it exits, WaitTimeout naming the nodes without slices."""
        t0, want = time.monotonic(), set(nodes)
        while True:
            items = k8s.list("ResourceSlice", field_selector=f"spec.driver={self.driver}")
            covered = {s.raw["spec"].get("nodeName") for s in items}
            if want <= covered:
                return len(items)
            if self.proc is None or self.proc.poll() is not None:
                raise errors.ClusterUnavailable(f"the reference driver's fleet process exited:\n{self.tail()}")
            if time.monotonic() - t0 > timeout:
                raise errors.WaitTimeout(
                    f"slices for {len(want)} fake nodes", timeout, f"no slices yet for {sorted(want - covered)[:5]}"
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, wait ``timeout`` seconds (it deletes its slices), then SIGKILL; returns its exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


def remove_fleet_objects(k8s: K8s, bench_id: str, driver: str) -> list[str]:
    """Delete the bench's namespaces, DeviceClass, fake nodes and every slice of ``driver`` (in the bench's own
    cluster only the fleet publishes for it); returns what is still there afterwards (empty when clean)."""
    for ns in k8s.list("Namespace", label_selector=f"{workload.BENCH_LABEL}={bench_id}"):
        try:
            k8s.delete("Namespace", ns.name)
        except errors.NotFound:
            pass
    try:
        k8s.delete("DeviceClass", workload.CLASS_NAME)
    except errors.NotFound:
        pass
    k8s.request("DELETE", "/api/v1/nodes", query={"labelSelector": NODE_SELECTOR})
    fake = {n.name for n in k8s.list("Node", label_selector=NODE_SELECTOR)}
    for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}"):  # the bench cluster's own driver
        try:
            k8s.delete("ResourceSlice", s.name)
        except errors.NotFound:
            pass
    left = [f"Node/{n}" for n in fake]
    left += [f"ResourceSlice/{s.name}" for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}")]
    if k8s.exists("DeviceClass", workload.CLASS_NAME):
        left.append(f"DeviceClass/{workload.CLASS_NAME}")
    return left
