"""``dra-conformance multi-cluster``: N local clusters side by side on one host, the main job on each (issue 27
§1: "two and three clusters at once on one host, each complete").

Each cluster is made by ``dra-conformance install`` (free slot, the driver from its chart; one after the other,
as slots are decided under the host lock; each cluster has its own kube-proxies), then the main job runs on every
cluster as an existing one (``run --cluster existing --driver-deploy preinstalled --node-access privileged-pod
--profile P``) — all at once, or one after the other with ``--serial`` while all N stay up. Prints each
cluster's slot, exit code, wall time and verdict, takes every cluster down (also on Ctrl-C/SIGTERM or a failed
install) and compares the host with the snapshot taken before the first one started. Exit 0 when every run
exited 0 and the host is left as found, 1 otherwise, 3 when a cluster could not be installed.
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from conformance_lab.local import hostdiff, hoststate
from conformance_lab.local.state import ClusterState

from conformance_tools.endurance import lab


def _slot(name: str) -> str:
    try:
        return str(ClusterState.load(name).slot)
    except (FileNotFoundError, ValueError):
        return "?"


def _runs(clusters: list[lab.Installed], args: argparse.Namespace, out: Path, extra: list[str]) -> list[lab.Outcome]:
    reports = [out / f"run-{c.name}" for c in clusters]
    argvs = [lab.existing_argv(c, args.driver, args.profile, r, extra) for c, r in zip(clusters, reports, strict=True)]
    if args.serial:
        results = [lab.wait_all([lab.spawn(a, r.with_suffix(".log"))])[0] for a, r in zip(argvs, reports, strict=True)]
    else:
        results = lab.wait_all([lab.spawn(a, r.with_suffix(".log")) for a, r in zip(argvs, reports, strict=True)])
    return [
        lab.Outcome(code, lab.verdict_of(text), took, r) for (code, text, took), r in zip(results, reports, strict=True)
    ]


def execute(args: argparse.Namespace, extra: list[str]) -> int:
    """Run what the module docstring says for ``args``; returns the exit code."""
    out = Path(args.out or Path("reports") / ("multi-" + datetime.datetime.now().strftime("%Y%m%dT%H%M%S")))
    out.mkdir(parents=True, exist_ok=True)
    before = hoststate.capture()
    before.save(out / "host-before.json")
    clusters: list[lab.Installed] = []
    outcomes: list[lab.Outcome] = []
    code = 0
    try:
        with lab.interruptible():
            for i in range(args.clusters):
                t0 = time.monotonic()
                clusters.append(lab.install(args.driver, args.nodes, out / f"install-{i}"))
                took = time.monotonic() - t0
                print(
                    f"multi: cluster {clusters[-1].name} (slot {_slot(clusters[-1].name)}) up in {took:.0f}s",
                    flush=True,
                )
            t0 = time.monotonic()
            outcomes = _runs(clusters, args, out, extra)
            how = "one after the other" if args.serial else "at once"
            print(f"multi: {len(clusters)} runs {how} in {time.monotonic() - t0:.0f}s", flush=True)
    except RuntimeError as exc:
        print(f"error: {exc}")
        code = 3
    except KeyboardInterrupt:
        print("multi: interrupted; taking the clusters down")
        code = 2
    finally:
        for c in clusters:
            print(f"multi: cluster {c.name} down (exit {lab.down(c.name, out / f'down-{c.name}.log')})", flush=True)
    for c, o in zip(clusters, outcomes, strict=False):
        print(f"  {c.name:<8} exit {o.code:<3} {o.wall_s:>6.0f}s  {o.verdict or '(no verdict line)'}")
    after = hoststate.capture()
    after.save(out / "host-after.json")
    changes = hostdiff.diff(before, after)
    print("\n".join(hostdiff.report(before, after, changes)))
    if code:
        return code
    ok = len(outcomes) == args.clusters and all(o.code == 0 for o in outcomes)
    return 0 if ok and not any(c.counts for c in changes) else 1


def register(subparsers) -> None:
    """Add the ``multi-cluster`` subcommand: its options, then ``-- <extra dra-conformance run arguments>``."""
    p = subparsers.add_parser(
        "multi-cluster", help="N local clusters side by side, the main job on each, then the host-state diff"
    )
    p.add_argument("--clusters", type=int, default=3, help="how many clusters (default 3)")
    p.add_argument("--serial", action="store_true", help="run the main jobs one after the other (all clusters up)")
    p.add_argument("--profile", default="core", help="test profile of each run (default core)")
    p.add_argument("--driver", default="reference", help="driver profile (default reference)")
    p.add_argument("--nodes", type=int, default=2, help="real nodes per cluster (default 2)")
    p.add_argument("--out", default=None, help="logs, reports, snapshots (default reports/multi-<time>)")
    p.add_argument("run_args", nargs="*", metavar="-- RUN_ARGS", help="more arguments for each run")
    p.set_defaults(func=lambda a: execute(a, a.run_args))
