"""`make cluster-faults`: break the cluster itself in the middle of a run and show what the run made of it
(issue 27 §2). Not part of `make test` (a few minutes per fault).

One local cluster (1 node, its own slot) with the reference driver preinstalled; for each fault one
``dra-conformance run --cluster existing --profile core`` of two tests, the second of which is the fault point
(:mod:`conformance_tools.faultpoint`: the fault is applied once that test's body is about to start, and repaired
once it has ended, before its teardown). Printed per fault: the verdict line, the exit code, the failure
classes, the evidence, the time from the fault to the end of the run and what the run left behind (objects
labelled with its run ID, found with the cluster's admin credentials; then removed by this tool).

Faults (:data:`FAULTS`): ``apiserver-restart`` (kube-apiserver stopped, started again after the test),
``etcd-stopped-30s``, ``credentials-revoked`` (the run's kubeconfig holds a ServiceAccount token whose
ServiceAccount is deleted), ``report-disk-full`` (``--report-dir`` on a 4 MiB tmpfs that is filled),
``node-network-cut`` (the node's link on the cluster bridge down while the test runs, up after it),
``scheduler-stopped`` (kube-scheduler killed with SIGKILL, as by a panic, started again after the test).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from conformance_lab.local import cluster_faults as cf
from conformance_lab.local.cluster import LocalCluster
from conformance_lab.local.config import LocalClusterConfig
from conformance_lab.local.provider import free_slot

from conformance.k8s import health, sweep
from conformance.k8s.client import K8s
from conformance_tools import faultpoint
from conformance_tools.preinstalled import reference_driver

PASSING = "test_driver_publishes_slices_with_devices"
TARGET = "test_claim_is_allocated_when_its_pod_is_scheduled"  # its body creates a claim: it needs the API
RUN_TIMEOUT = 900.0


@dataclasses.dataclass
class Lab:
    """What a fault acts on: the cluster (``state``, admin ``api``, admin ``kubeconfig``), a scratch dir."""

    state: object
    api: object
    kubeconfig: Path
    tmp: Path
    keep: Path | None = None  # where each fault's run log and report are copied (None: nowhere)


@dataclasses.dataclass
class Outcome:
    """One row of the table."""

    fault: str
    code: int
    verdict: str
    classes: str
    evidence: str
    seconds_to_end: float
    leftovers: str


def attach(name: str, tmp: Path) -> Lab:
    """The running local cluster ``name`` as a :class:`Lab` with the scratch dir ``tmp``."""
    from conformance_lab.local.state import ClusterState  # noqa: PLC0415

    handle = LocalCluster.load(name).handle
    if handle is None:
        raise KeyError(f"local cluster {name!r} is not running")
    return Lab(ClusterState.load(name), handle._api, handle.kubeconfig, tmp)


def run_command(kubeconfig: Path, profile: Path, report: Path) -> list[str]:
    """``dra-conformance run`` of :data:`PASSING` and :data:`TARGET` with the fault point loaded."""
    return [
        sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--kubeconfig", str(kubeconfig),
        "--driver", str(profile), "--profile", "core", "--report-dir", str(report), "--workers", "0",
        "--", "-p", "conformance_tools.faultpoint", "-k", f"{PASSING} or {TARGET}",
    ]  # fmt: skip


def drive(cmd: list[str], where: Path, on_start: Callable[[dict], None], on_end: Callable[[dict], None]):
    """Run ``cmd`` with the fault point on :data:`TARGET` (handshake files in ``where``); ``on_start(info)``
    applies the fault, ``on_end(info)`` repairs it. Returns ``(exit code, output, seconds from the fault to the
    end of the run)``. A run that never reaches the fault point still ends (its output tells why)."""
    where.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DRA_FAULTPOINT_TEST": TARGET, "DRA_FAULTPOINT_DIR": str(where), "PYTHONUNBUFFERED": "1"}
    log = where / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
        t_fault = time.monotonic()
        try:
            for mine, call, theirs in ((faultpoint.STARTED, on_start, faultpoint.GO),
                                       (faultpoint.ENDED, on_end, faultpoint.RESTORED)):  # fmt: skip
                if not _await(where / mine, proc):
                    break
                info = json.loads((where / mine).read_text())
                if mine == faultpoint.STARTED:
                    t_fault = time.monotonic()
                try:
                    call(info)
                finally:
                    (where / theirs).write_text("")
            proc.wait(timeout=RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    return proc.returncode, log.read_text(errors="replace"), time.monotonic() - t_fault


def _await(path: Path, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + RUN_TIMEOUT
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def leftovers(kubeconfig: Path, report: Path, remove: bool = True) -> str:
    """What the run of ``report`` left on the cluster (objects labelled with its run ID, read with the admin
    ``kubeconfig``), then removed when ``remove``; also whether the report dir's health log closed."""
    try:
        run_id = json.loads((report / "run.json").read_text())["run_id"]
    except (OSError, ValueError, KeyError):
        return "run.json unreadable: run ID unknown"
    k8s = K8s.from_kubeconfig(kubeconfig)
    left = [f"{o.kind}/{o.name}" for o in sweep.labelled(k8s, run_id)]
    if left and remove:
        sweep.sweep_run(k8s, run_id)
    return ", ".join(left) + " (removed by the tool)" if left else "none"


def _noop(_info: dict) -> None:
    return None


@contextlib.contextmanager
def stopped(lab: Lab, component: str, at_least_s: float = 0.0, crash: bool = False):
    """``component`` stopped (``crash``: killed) at the fault point, started again once the test has ended and
    ``at_least_s`` seconds have passed. Yields ``(kubeconfig, report dir, on_start, on_end)`` as every fault does."""
    stack, since = contextlib.ExitStack(), [0.0]

    def start(_info: dict) -> None:
        since[0] = time.monotonic()
        stack.enter_context(cf.component_stopped(lab.state, lab.api, component, crash=crash))

    def end(_info: dict) -> None:
        cf.pause(max(0.0, at_least_s - (time.monotonic() - since[0])))  # the fault's duration, not a wait
        stack.close()

    with stack:
        yield lab.kubeconfig, lab.tmp / f"report-{component}", start, end


@contextlib.contextmanager
def credentials_revoked(lab: Lab):
    """The run's kubeconfig holds a ServiceAccount token (cluster-admin); the ServiceAccount is deleted at the
    fault point and not brought back."""
    out = lab.tmp / "revocable.kubeconfig"
    with cf.revocable_kubeconfig(lab.api, lab.kubeconfig, out, f"dra-cfaults-{uuid.uuid4().hex[:6]}") as revoke:

        def start(_info: dict) -> None:
            revoke()
            refused(out)

        yield out, lab.tmp / "report-credentials", start, _noop


def refused(kubeconfig: Path, timeout: float = 60.0) -> None:
    """Wait until the API server refuses ``kubeconfig``'s credentials (it caches a token's successful
    authentication for a few seconds); RuntimeError with the last probe when it does not."""
    k8s, last = K8s.from_kubeconfig(kubeconfig), ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _ok, what, last = health.probe(k8s)
        if what == "credentials-refused":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the revoked credentials of {kubeconfig} still work after {timeout:.0f} s: {last}")


@contextlib.contextmanager
def report_disk_full(lab: Lab):
    """``--report-dir`` on a small tmpfs, filled at the fault point (unmounted at the end)."""
    with cf.small_disk(lab.tmp / "small-disk") as fill:
        yield lab.kubeconfig, lab.tmp / "small-disk" / "report", lambda _info: fill(), _noop


@contextlib.contextmanager
def node_network_cut(lab: Lab):
    """The node's network cut at the fault point (its link on the cluster bridge down), restored once the test
    has ended (the node Ready again)."""
    stack = contextlib.ExitStack()
    node = f"{lab.state.name}-node-0"

    def start(_info: dict) -> None:
        stack.enter_context(cf.node_network_cut(lab.state, lab.api, node))

    with stack:
        yield lab.kubeconfig, lab.tmp / "report-node-network", start, lambda _info: stack.close()


FAULTS: dict[str, Callable] = {
    "apiserver-restart": lambda lab: stopped(lab, "kube-apiserver"),
    "etcd-stopped-30s": lambda lab: stopped(lab, "etcd", at_least_s=30.0),
    "credentials-revoked": credentials_revoked,
    "report-disk-full": report_disk_full,
    "node-network-cut": node_network_cut,
    "scheduler-stopped": lambda lab: stopped(lab, "kube-scheduler", crash=True),
}


def one(lab: Lab, name: str, profile: Path) -> Outcome:
    """Run the fault ``name`` (:data:`FAULTS`) on ``lab`` and return its row."""
    with FAULTS[name](lab) as (kube, report, start, end):
        code, out, seconds = drive(run_command(kube, profile, report), lab.tmp / f"point-{name}", start, end)
        verdict = next((ln for ln in reversed(out.splitlines()) if ln.startswith("VERDICT:")), "(no VERDICT line)")
        doc = _summary(report)
        classes = sorted({f"{t['failureClass']}" for t in doc.get("tests", []) if t.get("failureClass")})
        fault = doc.get("clusterFault") or {}
        evidence = "; ".join(fault.get("outages") or [t["evidence"] for t in fault.get("tests", [])][:1])
        if not evidence and " — " in verdict:
            evidence = verdict.split(" — ", 1)[1]
        left = leftovers(lab.kubeconfig, report)
        if lab.keep is not None:
            _keep(lab.tmp / f"point-{name}" / "run.log", report, lab.keep / name)
    return Outcome(name, code, verdict, ",".join(classes) or "-", evidence or "-", seconds, left)


def _keep(log: Path, report: Path, to: Path) -> None:
    """Copy a fault's run log and what its report directory holds to ``to`` (best effort)."""
    to.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        shutil.copy2(log, to / "run.log")
    with contextlib.suppress(OSError, shutil.Error):
        shutil.copytree(report, to / "report", dirs_exist_ok=True, ignore=shutil.ignore_patterns("allure-report*"))


def _summary(report: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        return json.loads((report / "summary.json").read_text())
    return {}


def table(rows: list[Outcome]) -> str:
    """The rows as a Markdown table."""
    lines = ["| fault | exit | verdict | classes | evidence | s to end | leftovers |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r.verdict.replace("VERDICT: ", "")[:160]
        lines.append(f"| {r.fault} | {r.code} | {v} | {r.classes} | {r.evidence[:200]} | {r.seconds_to_end:.0f} "
                     f"| {r.leftovers} |")  # fmt: skip
    return "\n".join(lines)


@contextlib.contextmanager
def lab_cluster(name: str, slot: int):
    """A local cluster ``name`` (1 node, all DRA gates, no kube-proxy, slot ``slot``) with the reference driver
    preinstalled; yields ``(Lab, driver profile path)``. Everything is removed at exit (also on errors). When
    ``up`` fails (e.g. a cluster of that name is already running: another worktree's) nothing is torn down here:
    ``up`` removed what it had started, and a cluster it refused to start is not this call's."""
    cluster = LocalCluster(
        LocalClusterConfig(name=name, nodes=1, feature_gates="all", slot=slot, kube_proxy=False), progress=print
    )
    handle = cluster.up()
    tmp = Path(tempfile.mkdtemp(prefix="cfaults-"))
    try:
        with reference_driver(handle, tmp, source="cluster-faults") as (profile, _k8s):
            yield attach(name, tmp), profile
    finally:
        cluster.down()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance_tools.cluster_faults [--faults a,b] [--name N]``: the table on stdout; exit 0
    when every fault ended with ``ERROR (cluster)`` and nothing was left (but the namespace a run with revoked
    credentials cannot delete), else 1."""
    p = argparse.ArgumentParser(prog="cluster-faults", description=__doc__.split("\n\n")[0])
    p.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of {', '.join(FAULTS)}")
    p.add_argument(
        "--name",
        default=f"cfaults-{uuid.uuid4().hex[:4]}",  # unique: a shared host may run this tool twice at once
        help="name of the local cluster this tool starts and removes",
    )
    p.add_argument("--keep", default="reports/cluster-faults", help="where each fault's run log and report go")
    args = p.parse_args(argv)
    wanted = [f for f in args.faults.split(",") if f]
    unknown = [f for f in wanted if f not in FAULTS]
    if unknown:
        p.error(f"unknown fault(s) {unknown}; known: {list(FAULTS)}")
    rows = []
    with lab_cluster(args.name, free_slot()) as (lab, profile):
        lab.keep = Path(args.keep).resolve()
        for name in wanted:
            print(f"--- fault {name}", flush=True)
            rows.append(one(lab, name, profile))
            print(table(rows[-1:]), flush=True)
    print(table(rows))
    # a run whose credentials were revoked cannot delete its namespace: it says so, the tool removes it
    good = all(
        r.verdict.startswith("VERDICT: ERROR (cluster)") and (r.leftovers == "none" or r.fault == "credentials-revoked")
        for r in rows
    )
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
