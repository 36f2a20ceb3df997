"""``dra-conformance soak``: the main job N times in a row, on one cluster or on a fresh cluster each time, with
what grows between runs (issue 27 §3).

One cluster (default): ``dra-conformance install`` (a local cluster, the driver from its chart), then N runs of
``run --cluster existing --driver-deploy preinstalled --node-access privileged-pod --profile P`` on it, then
``cluster down``. After each run: the exit code and the verdict (timings removed), the wall time, resident
memory and open descriptors of kube-apiserver, the kubelets and the containerds (probes.usage), the objects on
the cluster (probes.objects) and the host-state lines changed since the snapshot after run 1 (hostdiff; only
this cluster's and unowned lines count, other clusters on a shared host are set aside).

``--fresh``: each run is ``run --cluster local --keep-cluster`` (the main job on a cluster of its own); its
cluster is measured, then taken down, and the host compared with the snapshot taken before run 1.

Both end with the host compared with the snapshot taken before anything started. Writes ``soak.json`` and the
snapshots (``host-before.json``, ``host-run-<i>.json``, ``host-after.json``: ``cluster host-state --diff`` reads
them) to ``--out``. Exit 0 when every verdict is the same PASS-family line and the host is left as found, 1
otherwise, 3 when the cluster could not be installed. Source of the goal: issue 27 §3 ("10/10 identical verdicts,
no growth").
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
from pathlib import Path

from conformance_lab.local import hostdiff, hoststate
from conformance_lab.local.config import STATE_ROOT

from conformance_tools.endurance import lab, probes


@dataclasses.dataclass
class Row:
    """One run and what was measured after it (see the module docstring); ``host`` is ``{section: changed
    lines}``, ``cluster`` the cluster measured."""

    run: int
    cluster: str
    outcome: lab.Outcome
    usage: probes.Usage | None
    objects: dict[str, int]
    host: dict[str, int]


def measure(run: int, cluster: str, kubeconfig: str, outcome: lab.Outcome) -> Row:
    """Usage and objects of ``cluster`` now (each '' / {} with the reason printed when unreadable)."""
    try:
        use = probes.usage(cluster)
    except (FileNotFoundError, ValueError) as exc:
        print(f"  run {run}: no process figures ({exc})", flush=True)
        use = None
    try:
        objs = probes.objects(kubeconfig)
    except Exception as exc:  # noqa: BLE001 - an API server that stopped answering is a finding, not a crash
        print(f"  run {run}: no object counts ({type(exc).__name__}: {exc})", flush=True)
        objs = {}
    return Row(run, cluster, outcome, use, objs, {})


def _one_cluster(args: argparse.Namespace, out: Path, extra: list[str]) -> list[Row]:
    cluster = lab.install(args.driver, args.nodes, out / "install")
    print(f"soak: cluster {cluster.name} installed (kubeconfig {cluster.kubeconfig})", flush=True)
    rows: list[Row] = []
    reference = None
    try:
        for i in range(1, args.runs + 1):
            outcome = lab.run_existing(cluster, args.driver, args.profile, out / f"run-{i}", extra)
            row = measure(i, cluster.name, cluster.kubeconfig, outcome)
            snap = hoststate.capture()
            snap.save(out / f"host-run-{i}.json")
            reference = reference or snap
            row.host = hostdiff.summary(hostdiff.diff(reference, snap, ours=frozenset({cluster.name})))
            rows.append(row)
            print(render_row(row), flush=True)
    finally:
        code = lab.down(cluster.name, out / "down.log")
        print(f"soak: cluster {cluster.name} down (exit {code})", flush=True)
    return rows


def _fresh(args: argparse.Namespace, out: Path, extra: list[str], before: hoststate.Snapshot) -> list[Row]:
    rows: list[Row] = []
    for i in range(1, args.runs + 1):
        outcome, name = lab.run_fresh(args.driver, args.profile, out / f"run-{i}", extra)
        try:
            kubeconfig = str(STATE_ROOT / name / "admin.kubeconfig")
            row = measure(i, name, kubeconfig, outcome) if name else Row(i, "", outcome, None, {}, {})
        finally:
            if name:
                lab.down(name, out / f"down-{i}.log")
        snap = hoststate.capture()
        snap.save(out / f"host-run-{i}.json")
        row.host = hostdiff.summary(hostdiff.diff(before, snap))
        rows.append(row)
        print(render_row(row), flush=True)
    return rows


HEADER = (
    "run exit  wall_s  apiserver_MiB  fds(apiserver/kubelets/containerds)  ns/claims/slices/classes/pods/runs-left"
    "  host  verdict"
)


def render_row(row: Row) -> str:
    """One table line (``-`` for what was not measured)."""
    u = row.usage
    mem = f"{u.rss_mib.get('kube-apiserver', 0):.1f}" if u else "-"
    fds = "/".join(str(u.fds.get(p, 0)) for p in probes.PROCESSES) if u else "-"
    objs = "/".join(str(row.objects.get(k, "-")) for k in (*probes.OBJECT_KINDS, "runs left"))
    host = sum(row.host.values())
    return (
        f"{row.run:>3} {row.outcome.code:>4} {row.outcome.wall_s:>7.0f}  {mem:>13}  {fds:>35}  {objs:>39}  "
        f"{host:>4}  {row.outcome.verdict or '(no verdict line)'}"
    )


def growth(rows: list[Row]) -> list[str]:
    """First-to-last change of memory, descriptors and object counts over the runs that measured them."""
    measured = [r for r in rows if r.usage]
    if len(measured) < 2:
        return ["growth: fewer than two measured runs"]
    a, b = measured[0], measured[-1]
    lines = [f"growth run {a.run} -> run {b.run}:"]
    for p in probes.PROCESSES:
        lines.append(
            f"  {p}: RSS {a.usage.rss_mib.get(p, 0):.1f} -> {b.usage.rss_mib.get(p, 0):.1f} MiB, "
            f"fds {a.usage.fds.get(p, 0)} -> {b.usage.fds.get(p, 0)}"
        )
    objs = ", ".join(f"{k} {a.objects.get(k, '-')} -> {b.objects.get(k, '-')}" for k in b.objects)
    lines.append(f"  objects: {objs or 'not counted'}")
    lines.append(f"  host lines changed since run {rows[0].run}: {dict(b.host) or 'none'}")
    return lines


def identical(rows: list[Row]) -> bool:
    """Every run printed the same PASS-family verdict line with exit 0."""
    verdicts = {r.outcome.verdict for r in rows}
    return bool(rows) and len(verdicts) == 1 and all(r.outcome.code == 0 for r in rows)


def _record(out: Path, args: argparse.Namespace, rows: list[Row], changes: list[hostdiff.Change]) -> None:
    data = {
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": "fresh" if args.fresh else "one-cluster",
        "profile": args.profile,
        "driver": args.driver,
        "runs": [
            {**dataclasses.asdict(r), "outcome": {**dataclasses.asdict(r.outcome), "report": str(r.outcome.report)}}
            for r in rows
        ],
        "hostLeftovers": [c.render() for c in changes if c.counts],
    }
    (out / "soak.json").write_text(json.dumps(data, indent=1))


def execute(args: argparse.Namespace, extra: list[str]) -> int:
    """Run the soak ``args`` describe (module docstring); returns the exit code."""
    out = Path(args.out or Path("reports") / ("soak-" + datetime.datetime.now().strftime("%Y%m%dT%H%M%S")))
    out.mkdir(parents=True, exist_ok=True)
    before = hoststate.capture()
    before.save(out / "host-before.json")
    mode = "a fresh cluster each run" if args.fresh else "one cluster"
    print(f"soak: {args.runs} runs of --driver {args.driver} --profile {args.profile} on {mode}; out {out}", flush=True)
    print(HEADER, flush=True)
    rows: list[Row] = []
    try:
        with lab.interruptible():
            rows = _fresh(args, out, extra, before) if args.fresh else _one_cluster(args, out, extra)
    except RuntimeError as exc:
        print(f"error: {exc}")
        return 3
    except KeyboardInterrupt:
        print("soak: interrupted; clusters taken down")
        return 2
    after = hoststate.capture()
    after.save(out / "host-after.json")
    changes = hostdiff.diff(before, after)
    _record(out, args, rows, changes)
    print("\n".join([*growth(rows), *hostdiff.report(before, after, changes)]))
    same = identical(rows)
    passed = sum(r.outcome.code == 0 for r in rows)
    print(f"soak: {passed}/{args.runs} exit 0, verdicts {'identical' if same else 'DIFFER'}")
    return 0 if same and not any(c.counts for c in changes) else 1


def register(subparsers) -> None:
    """Add the ``soak`` subcommand: its options, then ``-- <extra dra-conformance run arguments>``."""
    p = subparsers.add_parser(
        "soak", help="the main job N times on one cluster (or fresh ones): verdicts, memory, fds, objects, host state"
    )
    p.add_argument("--runs", type=int, default=10, help="how many runs (default 10)")
    p.add_argument("--fresh", action="store_true", help="a fresh local cluster for each run (default: one cluster)")
    p.add_argument("--profile", default="core", help="test profile of each run (default core, for speed)")
    p.add_argument("--driver", default="reference", help="driver profile (default reference)")
    p.add_argument("--nodes", type=int, default=2, help="real nodes of the cluster (default 2)")
    p.add_argument("--out", default=None, help="where logs, reports and soak.json go (default reports/soak-<time>)")
    p.add_argument("run_args", nargs="*", metavar="-- RUN_ARGS", help="more arguments for each run")
    p.set_defaults(func=lambda a: execute(a, a.run_args))
