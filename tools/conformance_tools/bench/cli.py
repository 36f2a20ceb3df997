"""``dra-conformance bench``: options -> :class:`BenchConfig` -> :func:`conformance_tools.bench.run.bench`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.core.errors import ConfigError
from conformance_tools.bench.config import VARIANTS, BenchConfig, parse_points


def register(subparsers) -> None:
    """Add the ``bench`` subcommand."""
    p = subparsers.add_parser(
        "bench",
        help="DRA scheduling benchmark on the local cluster with kwok fake nodes (throughput, latency, DRA/classic)",
        description="Measure DRA scheduling throughput and latency with the reference driver's fleet mode "
        "publishing ResourceSlices for kwok fake nodes; report in reports/bench/<id>/.",
    )
    p.add_argument("--nodes", type=int, default=100, help="fake nodes of the main point (default 100)")
    p.add_argument("--devices", type=int, default=8, help="devices per fake node (default 8)")
    p.add_argument("--pods", type=int, default=1000, help="pods per workload, capped at the fleet (default 1000)")
    p.add_argument(
        "--scale-points", default="10,100,500", help="fleet sizes for the scaling curve (default 10,100,500)"
    )
    p.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"DRA workloads at the main point (default all: {','.join(VARIANTS)})",
    )
    p.add_argument("--no-classic", action="store_true", help="skip the classic extended-resource workload")
    p.add_argument("--share", type=int, default=4, help="pods per shared claim (default 4)")
    p.add_argument("--k8s-version", default=None, help="Kubernetes minor of the local cluster (default: pinned)")
    p.add_argument("--feature-gates", default="defaults", choices=("defaults", "all"), help="default: defaults")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one workload may take (default 600)")
    p.add_argument(
        "--client-qps",
        type=int,
        default=1000,
        help="kube-scheduler and kube-controller-manager API QPS/burst (default 1000; 0 = component defaults)",
    )
    p.add_argument(
        "--mirror",
        default="",
        metavar="DRIVER",
        help="mirror the ResourceSlices DRIVER published on one node onto every fake node (its device model: "
        "devices, attributes, counters, partitions) instead of the reference fleet; variants template, shared "
        "(and cel with --mirror-selector), classic on the same fleet",
    )
    p.add_argument("--mirror-slices", default="", help="read the slices from this YAML/JSON file (default: live)")
    p.add_argument("--mirror-kubeconfig", default="", help="cluster to read them from (default $KUBECONFIG)")
    p.add_argument("--mirror-node", default="", help="node whose slices to copy (default: first with slices)")
    p.add_argument("--mirror-selector", default="", help="CEL selector of the cel variant (e.g. the profile's)")
    p.add_argument("--out", default="", help="report directory (default reports/bench/<id>)")
    p.add_argument("--no-html", action="store_true", help="skip the Allure HTML")
    p.set_defaults(func=bench_command)


def bench_command(args: argparse.Namespace) -> int:
    """Run the benchmark; exit 4 on bad input."""
    try:
        cfg = BenchConfig(
            nodes=args.nodes,
            devices=args.devices,
            pods=args.pods,
            scale_points=parse_points(args.scale_points),
            variants=tuple(v.strip() for v in args.variants.split(",") if v.strip()),
            classic=not args.no_classic,
            share=args.share,
            k8s_version=args.k8s_version,
            feature_gates=args.feature_gates,
            timeout=args.timeout,
            client_qps=args.client_qps,
            out_dir=args.out,
            html=not args.no_html,
            mirror=args.mirror,
            mirror_slices=args.mirror_slices,
            mirror_kubeconfig=args.mirror_kubeconfig,
            mirror_node=args.mirror_node,
            mirror_selector=args.mirror_selector,
        ).validate()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    from conformance_tools.bench.run import bench  # noqa: PLC0415 - the cluster code loads only for a real run

    try:
        return bench(cfg, Path("reports") / "bench", progress=lambda s: print(s, flush=True))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
