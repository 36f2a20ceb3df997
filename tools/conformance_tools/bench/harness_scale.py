"""``make harness-scale``: how the harness's own work grows with the fleet (issue 26 §4, "the harness at scale").

A local cluster (one real node) gets kwok fake nodes, ascending through ``--nodes`` (e.g. 100 300 1000), each
carrying a driver's mirrored slices (:mod:`conformance_tools.bench.mirror`; default the dra-example-driver
layout captured from a real node, ``fixtures/bench/dra-example-driver-slices.json``, owned by its Node as the
kubelet plugin helper does). Per fleet size a "run" puts one pod with a ResourceClaimTemplate claim per fake
node (or ``--pods`` in all; scheduled and allocated by the real scheduler, kwok marks them Running), all
labelled with a run ID, and then times, through an existing-cluster handle (no node access, as
``--cluster existing`` sees it):

* ``discovery``: :class:`conformance.clusters.existing.ExistingProvider`'s handle and
  :func:`conformance.runner.facts.discover` (nodes, kubelet gates, slices, capabilities) with the driver's profile;
* ``invariants``: :func:`conformance.invariants.snapshot` of the run's claims and :func:`conformance.invariants.judge`
  (one LIST of the driver's slices, every slice rule, the allocation rules over every claim);
* ``sweep``: :func:`conformance.k8s.sweep.sweep_run` (pods, their claims, the template, DeviceClass, namespace).

Each phase runs under cProfile at the largest size (``profile-<phase>-<nodes>.txt``: the top functions). Writes
``harness-scale.json``, ``harness-scale.png``/``.svg`` and prints the table. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import secrets
import signal
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.core import errors, names
from conformance.k8s.client import K8s
from conformance_tools.bench import fleet as fleetlib
from conformance_tools.bench import mirror as mirrorlib
from conformance_tools.bench import report, workload

REPO = Path(__file__).resolve().parents[3]
DEFAULT_SLICES = REPO / "fixtures" / "bench" / "dra-example-driver-slices.json"
PHASES = ("discovery", "invariants", "sweep")


def run_objects(run_id: str, driver: str, pods: int, image: str) -> list[dict]:
    """The run's objects, every one labelled with ``run_id`` (the sweep finds them by that label): namespace,
    DeviceClass, ResourceClaimTemplate (its claims carry the label too) and ``pods`` pods on the fake nodes."""
    labels = names.run_labels(run_id)
    ns = f"scale-{names.label_value(run_id)[-20:]}".lower().replace("_", "-").replace(".", "-")
    out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}]
    device_class = workload.device_class(driver, run_id)
    device_class["metadata"].update(name=f"{ns}-gpu", labels=labels)
    out.append(device_class)
    spec = workload.claim_spec("template", driver)
    spec["devices"]["requests"][0]["exactly"]["deviceClassName"] = device_class["metadata"]["name"]
    meta = {"name": "gpu", "namespace": ns, "labels": labels}
    out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta,
                "spec": {"metadata": {"labels": labels}, "spec": spec}})  # fmt: skip
    for i in range(pods):
        pod = workload.pod("template", i, image, 1)
        pod["metadata"].update(namespace=ns, labels=labels)
        out.append(pod)
    return out


def _all_bound(k8s: K8s, ns: str, pods: int, timeout: float) -> float:
    t0 = time.monotonic()
    while True:
        bound = sum(1 for p in k8s.list("Pod", ns) if p.get("spec.nodeName"))
        if bound >= pods:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise errors.WaitTimeout(f"{pods} pods of {ns} bound", timeout, f"{bound} bound")
        time.sleep(2)


def _owner_uids(k8s: K8s) -> dict[str, str]:
    return {n.name: n.uid for n in k8s.list("Node", label_selector=fleetlib.NODE_SELECTOR)}


def _timed(phase: str, nodes: int, fn, profile_dir: Path | None, cpu: dict):
    """``(seconds, result)`` of ``fn()``, its CPU seconds in ``cpu[phase]`` (this process: the harness's own
    work, apart from waiting on the cluster); under cProfile when ``profile_dir`` (top 25 by cumulative time)."""
    prof = cProfile.Profile() if profile_dir else None
    t0, c0 = time.perf_counter(), time.process_time()
    result = prof.runcall(fn) if prof else fn()
    seconds, cpu[phase] = time.perf_counter() - t0, round(time.process_time() - c0, 2)
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(25)
        (profile_dir / f"profile-{phase}-{nodes}.txt").write_text(text.getvalue(), encoding="utf-8")
    return seconds, result


def measure(
    handle, model: mirrorlib.Mirror, profile, nodes: int, out: Path, profiled: bool, progress, pods: int = 0
) -> dict:
    """One fleet size: fake nodes and mirrored slices up to ``nodes``, the run's ``pods`` (0: one per node)
    bound, then the three phases timed; returns the row (seconds per phase, objects, API server RSS)."""
    pods = pods or nodes
    from conformance.clusters.existing import ExistingCluster, ExistingNode, choose_images  # noqa: PLC0415
    from conformance.invariants import judge, snapshot  # noqa: PLC0415
    from conformance.k8s import discovery  # noqa: PLC0415
    from conformance.k8s.sweep import sweep_run  # noqa: PLC0415
    from conformance.runner import facts  # noqa: PLC0415

    k8s = K8s.from_kubeconfig(handle.kubeconfig)
    fake = fleetlib.add_fake_nodes(k8s, handle.name, nodes, model.units)
    slices = mirrorlib.publish(k8s, model, fake, "harness-scale", owner_uids=_owner_uids(k8s))
    run_id = f"hs{nodes}-{int(time.time())}"
    objects = run_objects(run_id, model.driver, pods, handle.images.get("pause", "pause"))
    ns = objects[0]["metadata"]["name"]
    with ThreadPoolExecutor(8) as pool:
        for obj in objects[:3]:
            k8s.create(obj)
        list(pool.map(k8s.create, objects[3:]))
    bind_s = _all_bound(k8s, ns, pods, timeout=60 + pods)
    progress(f"{nodes} fake nodes, {slices} slices, {pods} pods bound in {bind_s:.1f} s")
    prof_dir = out if profiled else None

    def discover():
        listed = discovery.nodes(k8s)
        version, members = discovery.server_version(k8s), [ExistingNode(n.name) for n in listed]
        cluster = ExistingCluster(handle.kubeconfig, version, members, images=choose_images(listed))
        return facts.discover(k8s, profile, cluster=cluster)

    harness = types.SimpleNamespace(
        report_dir=out / f"invariants-{nodes}",
        session=types.SimpleNamespace(k8s=k8s, driver=types.SimpleNamespace(name=model.driver), profile=profile),
    )

    def invariants():
        state = {"snapshots": [snapshot(k8s, [ns], f"harness-scale-{nodes}")], "start": time.time(), "tests": 1}
        return json.loads(judge(harness, f"harness-scale-{nodes}", state, []).read_text())

    row = {"nodes": nodes, "slices": slices, "pods": pods, "bind_s": round(bind_s, 1)}
    cpu: dict[str, float] = {}
    caps_s, (caps, found) = _timed("discovery", nodes, discover, prof_dir, cpu)
    inv_s, outcome = _timed("invariants", nodes, invariants, prof_dir, cpu)
    sweep_s, swept = _timed("sweep", nodes, lambda: sweep_run(k8s, run_id), prof_dir, cpu)
    row.update(discovery_s=round(caps_s, 2), invariants_s=round(inv_s, 2), sweep_s=round(sweep_s, 2))
    row.update({f"{phase}_cpu_s": value for phase, value in cpu.items()})
    row.update(
        devices_discovered=len(found["devices"]),
        allocated_claims=outcome["allocated_claims"],
        violations=len(outcome["violations"]),
        problems=outcome["problems"],
        swept=len(swept),
        apiserver_rss_mib=apiserver_rss_mib(handle),
    )
    return row


def apiserver_rss_mib(handle) -> float | None:
    """Resident memory of the cluster's kube-apiserver in MiB (None when its process is not found)."""
    port = str(handle.server).rsplit(":", 1)[-1]
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if not argv[0].endswith(b"kube-apiserver") or f"--secure-port={port}".encode() not in argv:
                continue
            rss = next(ln for ln in (proc / "status").read_text().splitlines() if ln.startswith("VmRSS:"))
            return round(int(rss.split()[1]) / 1024, 1)
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return None


def table(rows: list[dict]) -> str:
    """The printed table: seconds per phase against fleet size, and the ratio to the smallest size."""
    head = (
        "| nodes | slices | pods | discovery s (CPU s) | invariants s (CPU s) | sweep s (CPU s) | API server RSS MiB "
    )
    head += "| violations |"
    lines = [head, "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        wall_cpu = [f"{r[f'{p}_s']} ({r.get(f'{p}_cpu_s', '-')})" for p in PHASES]
        lines.append(
            f"| {r['nodes']} | {r['slices']} | {r['pods']} | {' | '.join(wall_cpu)} | {r['apiserver_rss_mib']} | "
            f"{r['violations']} |"
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        grow = last["nodes"] / first["nodes"]
        per = ", ".join(f"{p} x{last[f'{p}_s'] / max(first[f'{p}_s'], 1e-6):.1f}" for p in PHASES)
        lines.append(f"\nfrom {first['nodes']} to {last['nodes']} nodes (x{grow:g}): {per}")
    return "\n".join(lines)


def plot(rows: list[dict], out: Path) -> list[Path]:
    """``harness-scale.png`` and ``.svg``: seconds per phase against fake nodes (log-log, with a linear guide)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [r["nodes"] for r in rows]
    for phase in PHASES:
        ax.plot(xs, [r[f"{phase}_s"] for r in rows], marker="o", label=phase)
    if rows:
        base = max(r[f"{p}_s"] for p in PHASES for r in rows[:1])
        ax.plot(xs, [base * x / xs[0] for x in xs], ls=":", color="grey", label="linear from the largest at start")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kwok nodes (one mirrored slice set and one pod each)")
    ax.set_ylabel("seconds")
    ax.set_title("Harness work vs fleet size (existing-cluster mode)")
    ax.legend()
    fig.tight_layout()
    written = [out / "harness-scale.png", out / "harness-scale.svg"]
    for path in written:
        fig.savefig(path, dpi=100)
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m conformance_tools.bench.harness_scale --nodes 100 300 1000``; exit 0, 1 when a phase
    left a problem, 2 interrupted, 3 the cluster failed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", nargs="+", type=int, default=[100, 300, 1000], help="fleet sizes, ascending")
    p.add_argument("--slices", default=str(DEFAULT_SLICES), help="mirrored slice file (bench --mirror format)")
    p.add_argument("--driver", default="gpu.example.com", help="driver of the slice file")
    p.add_argument("--profile", default="dra-example-driver", help="driver profile the discovery evaluates")
    p.add_argument("--pods", type=int, default=0, help="the run's pods per size (default 0: one per node)")
    p.add_argument("--out", default="", help="output directory (default reports/harness-scale/<time>)")
    args = p.parse_args(argv)
    from conformance.drivers import profiles  # noqa: PLC0415
    from conformance_tools.bench.config import BenchConfig  # noqa: PLC0415
    from conformance_tools.bench.run import _start_cluster, _teardown  # noqa: PLC0415

    sizes = sorted(set(args.nodes))
    model, profile = mirrorlib.load(Path(args.slices), args.driver), profiles.load(args.profile)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = Path(args.out or REPO / "reports" / "harness-scale" / stamp)
    out.mkdir(parents=True, exist_ok=True)
    cluster, rows, code = None, [], 0
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM tears down like Ctrl-C
    try:
        cluster = _start_cluster(stamp + "-" + secrets.token_hex(2), BenchConfig(feature_gates="defaults"), out, print)
        for nodes in sizes:
            rows.append(measure(cluster.handle, model, profile, nodes, out, nodes == sizes[-1], print, args.pods))
            print(json.dumps(rows[-1]), flush=True)
            code = code or (1 if rows[-1]["problems"] else 0)
    except KeyboardInterrupt:
        code = 2
    except (errors.ConformanceError, OSError) as exc:
        print(f"error: {exc}")
        code = 3
    finally:
        k8s = K8s.from_kubeconfig(cluster.handle.kubeconfig) if cluster is not None else None
        code = _teardown(k8s, None, cluster, "harness-scale", print, code, model.driver)
        signal.signal(signal.SIGTERM, previous)
    doc = {"machine": report.machine(), "rows": rows}
    (out / "harness-scale.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if rows:
        plot(rows, out)
        print(table(rows))
    print(f"report: {out}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
