"""Orchestration of ``dra-conformance bench``: a local cluster (one real node, kwok on), the DeviceClass, the
fleet process; per fleet size (ascending, fake nodes added as it grows) the ``template`` and ``classic``
workloads, and at the main size every selected variant; then the report, and the tear-down (fleet stopped:
it deletes its slices; namespaces, DeviceClass, fake nodes deleted and checked gone; cluster down). Ctrl-C
(or SIGTERM) stops the current workload at once and runs the same tear-down; exit code 2.
"""

from __future__ import annotations

import dataclasses
import secrets
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.provider import free_slot
from conformance_lab.local.state import SlotTaken
from urllib3.exceptions import HTTPError as TransportError

from conformance.core import errors
from conformance.k8s.client import K8s
from conformance.reporting.html import ReportError
from conformance_tools.bench import fleet as fleetlib
from conformance_tools.bench import mirror as mirrorlib
from conformance_tools.bench import report, workload
from conformance_tools.bench.config import CLASSIC, BenchConfig
from conformance_tools.bench.measure import delete_namespace, run_workload

REFERENCE_DRIVER = "gpu.dra-conformance.test"  # reference_driver.DRIVER_NAME (the packages never import each other)
Progress = Callable[[str], None]


def _workloads(cfg: BenchConfig, nodes: int) -> list[str]:
    names = list(cfg.run_variants()) if nodes == cfg.nodes else ["template"]
    return names + ([CLASSIC] if cfg.classic else [])


def _qps_args(qps: int) -> dict[str, tuple[str, ...]]:
    """Client QPS/burst flags of the scheduler and controller manager (none for 0: component defaults)."""
    flags = (f"--kube-api-qps={qps}", f"--kube-api-burst={qps}") if qps else ()
    return {"kube-scheduler": flags, "kube-controller-manager": flags}


def _start_cluster(bench_id: str, cfg: BenchConfig, out: Path, progress: Progress) -> LocalCluster:
    for _ in range(8):
        cluster = LocalCluster(
            LocalClusterConfig(
                name=f"b{bench_id[-4:]}",
                nodes=1,
                kwok_nodes=1,
                k8s_version=cfg.k8s_version,
                feature_gates=cfg.feature_gates,
                log_dir=out / "cluster-logs",
                slot=free_slot(),
                kube_proxy=False,
                extra_args=_qps_args(cfg.client_qps),
            ),
            progress,
        )
        try:
            cluster.up()
            return cluster
        except SlotTaken as exc:
            progress(f"{exc}: choosing another slot")
    raise errors.ClusterUnavailable("no free local cluster slot for the benchmark")


def _line(r: dict) -> str:
    b, a = r["latency_s"]["pod_bound"], r["latency_s"]["claim_allocated"] or {}
    alloc = f" allocated p50/p99 {a.get('p50')}/{a.get('p99')} s," if a else ""
    return (
        f"{r['nodes']:>5} nodes {r['variant']:<16} {r['bound']}/{r['pods']} pods bound, "
        f"{r['throughput_pods_per_s']:g} pods/s,{alloc} bound p50/p90/p99 {b['p50']}/{b['p90']}/{b['p99']} s"
    )


def bench(cfg: BenchConfig, out_root: Path, progress: Progress = print) -> int:
    """Run the benchmark; returns the exit code (0 done, 1 a workload left pods unbound or the tear-down left
    objects, 2 interrupted, 3 cluster or fleet unusable). Raises ConfigError for bad options."""
    cfg.validate()
    model = mirrorlib.resolve(cfg, progress)  # before the cluster: a bad source fails fast (ConfigError)
    driver = model.driver if model else REFERENCE_DRIVER
    bench_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
    out = Path(cfg.out_dir) if cfg.out_dir else out_root / bench_id
    out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM behaves like Ctrl-C
    started, results, code = time.time(), [], 0
    cluster = fleet = k8s = None
    cluster_info: dict = {}
    try:
        cluster = _start_cluster(bench_id, cfg, out, progress)
        handle = cluster.handle
        cluster_info = {
            "kubernetes": handle.k8s_version,
            "feature_gates": cfg.feature_gates,
            "real_nodes": len(handle.nodes),
            "driver": driver,
            "client_qps": cfg.client_qps or "component defaults",
        }
        if model:
            not_run = mirrorlib.unfit(model, cfg.variants, cfg.mirror_selector)
            cluster_info["mirror"] = {**model.describe(), "not_run": not_run}
            for name, why in not_run.items():
                progress(f"not run for this device model: {name}: {why}")
        k8s = K8s.from_kubeconfig(handle.kubeconfig)
        k8s.create(workload.device_class(driver, bench_id))
        devices = model.units if model else cfg.devices
        if model is None:
            fleet = fleetlib.FleetProcess(handle.kubeconfig, cfg.devices, driver, out / "fleet.log").start()
        for nodes in cfg.points():
            t0 = time.monotonic()
            names = fleetlib.add_fake_nodes(k8s, handle.name, nodes, devices)
            slices = fleet.wait_published(k8s, names) if fleet else mirrorlib.publish(k8s, model, names, bench_id)
            progress(f"{nodes} fake nodes Ready, {slices} ResourceSlices published ({time.monotonic() - t0:.1f} s)")
            for variant in _workloads(cfg, nodes):
                pods = workload.pods_for(variant, nodes, devices, cfg.pods, cfg.share)
                ns = f"bench-{variant}-{nodes}"
                r = run_workload(
                    k8s,
                    variant=variant,
                    ns=ns,
                    bench_id=bench_id,
                    driver=driver,
                    image=handle.images.get("pause", "pause"),
                    pods=pods,
                    share=cfg.share,
                    timeout=cfg.timeout,
                    stop=stop,
                    selector=cfg.mirror_selector,
                )
                r.update(nodes=nodes, devices_per_node=devices, pods_requested=cfg.pods)
                results.append(r)
                progress(_line(r))
                if r["bound"] < r["pods"]:
                    code = 1
                    progress(f"  {r['pods'] - r['bound']} pod(s) not bound, e.g. {r['pending']}")
                r["cleanup_s"] = round(delete_namespace(k8s, ns), 1)  # pods, claims, namespace gone: devices free
        data = report.build(bench_id, dataclasses.asdict(cfg), cluster_info, results, started, time.time())
        try:
            written = report.write(out, data, html=cfg.html)
        except ReportError as exc:  # the JSON, plots and summary are written before the HTML
            progress(f"Allure HTML not built: {str(exc).splitlines()[0]}")
            written = {"summary.md": out / "summary.md", "bench.json": out / "bench.json"}
        for row in data["dra_over_classic"]:
            progress(
                f"DRA/classic at {row['nodes']} nodes: throughput x{row['throughput']}, "
                f"bound p50 x{row['bound_p50']}, p99 x{row['bound_p99']}"
            )
        progress(f"report: {written['summary.md']} ({', '.join(sorted(written))})")
    except KeyboardInterrupt:
        stop.set()
        progress("interrupted: cleaning up")
        code = 2
    except errors.ConformanceError as exc:  # cluster, fleet, waits, API errors: cleaned up below
        progress(f"error: {exc}")
        code = 3
    except (OSError, TransportError) as exc:  # the API server stopped answering: the partial report below
        progress(f"error: the cluster stopped answering: {str(exc)[:300]}")
        code = 3
    finally:
        code = _teardown(k8s, fleet, cluster, bench_id, progress, code, driver)
        signal.signal(signal.SIGTERM, previous)
        if code in (2, 3) and results:  # interrupted or cut short: keep what was measured (no HTML)
            data = report.build(bench_id, dataclasses.asdict(cfg), cluster_info, results, started, time.time())
            data["interrupted" if code == 2 else "cut_short"] = True
            report.write(out, data, html=False)
            progress(f"partial report: {out / 'summary.md'}")
    return code


def _teardown(k8s, fleet, cluster, bench_id: str, progress: Progress, code: int, driver: str) -> int:
    """Stop the fleet, delete the bench's objects (slices of ``driver``: the fleet's or the mirror's) and check
    them gone, stop the cluster; never raises. A second Ctrl-C skips to the cluster's tear-down."""
    t0 = time.monotonic()
    try:
        if fleet is not None:
            rc = fleet.stop()
            progress(f"fleet stopped (exit {rc}), its slices deleted")
        if k8s is not None:
            left = fleetlib.remove_fleet_objects(k8s, bench_id, driver)
            if left:
                progress(f"TEARDOWN PROBLEM: still present: {left[:10]}")
                code = code or 1
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the cluster still goes down
        progress(f"object clean-up cut short: {str(exc)[:200] or type(exc).__name__}")
        code = code or 1
    if cluster is not None:
        try:
            cluster.down()
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
            progress(f"TEARDOWN PROBLEM: cluster down failed: {str(exc)[:200] or type(exc).__name__}")
            code = code or 1
    progress(f"tear-down done in {time.monotonic() - t0:.1f} s")
    return code
