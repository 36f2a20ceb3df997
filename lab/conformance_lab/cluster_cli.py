"""`dra-conformance cluster up|down|status|logs` for the local cluster provider."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from conformance.core.errors import ConformanceError

DEFAULT_NAME = "dra"


def _print(line: str) -> None:
    print(line, flush=True)


def _up(args: argparse.Namespace) -> int:
    from conformance_lab.local import LocalCluster, LocalClusterConfig  # noqa: PLC0415 - CLI loads the provider on use

    try:
        cfg = LocalClusterConfig(
            name=args.name,
            nodes=args.nodes,
            kwok_nodes=args.kwok_nodes,
            k8s_version=args.k8s_version,
            feature_gates=args.feature_gates,
            log_dir=Path(args.log_dir) if args.log_dir else None,
            slot=args.slot,
            kube_proxy=False if args.no_kube_proxy else None,
            daemonset_paths=args.daemonset_paths,
        )
        t0 = time.monotonic()
        handle = LocalCluster(cfg, progress=_print).up()
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"\nup in {time.monotonic() - t0:.1f}s. Kubernetes {handle.k8s_version}, "
        f"nodes: {', '.join(n.name for n in handle.nodes)}"
        + (f", kwok: {', '.join(handle.kwok_nodes)}" if handle.kwok_nodes else "")
    )
    print(f"export KUBECONFIG={handle.kubeconfig}")
    print(f"logs: {handle.log_dir}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from conformance_lab.local import LocalCluster  # noqa: PLC0415 - CLI loads the provider on use

    try:
        cluster = LocalCluster.load(args.name)
    except FileNotFoundError as exc:
        print(f"{exc}; nothing to do")
        return 0
    cluster.progress = _print
    try:
        cluster.down()
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    from conformance_lab.local.state import ClusterState, existing_clusters  # noqa: PLC0415 - CLI loads the provider on use

    try:
        state = ClusterState.load(args.name)
    except FileNotFoundError as exc:
        others = existing_clusters()
        print(f"{exc}" + (f"; existing: {', '.join(others)}" if others else ""))
        return 1
    print(
        f"cluster {state.name}: phase {state.phase}, Kubernetes {state.k8s_version}, slot {state.slot}, "
        f"node IP {state.node_ip}"
    )
    print(f"kubeconfig: {Path(state.path).parent / 'admin.kubeconfig'}")
    print(
        f"feature gates ({state.feature_gate_mode}): "
        + (", ".join(f"{k}={v}" for k, v in sorted(state.feature_gates.items())) or "(release defaults)")
    )
    print(f"runtime-config: {state.runtime_config or '(release defaults)'}")
    print(f"images: {state.images}")
    if state.kwok_nodes:
        print(f"kwok nodes: {', '.join(state.kwok_nodes)}")
    print("processes:")
    for p in state.processes:
        print(
            f"  {(p.node or '-'):<16} {p.name:<26} pid {p.pid:<8} "
            f"{'running' if p.is_running() else 'STOPPED':<8} {p.log_path}"
        )
    return 0 if all(p.is_running() for p in state.processes) else 2


def _logs(args: argparse.Namespace) -> int:
    from conformance_lab.local.state import ClusterState  # noqa: PLC0415 - CLI loads the provider on use

    try:
        state = ClusterState.load(args.name)
    except FileNotFoundError as exc:
        print(exc)
        return 1
    print(f"component logs of {state.name}: {state.log_dir}")
    for p in state.processes:
        print(f"  {p.log_path}")
    return 0


def register(subparsers) -> None:
    """Add `cluster` with up|down|status|logs; each parser sets ``func(args) -> int``."""
    cluster = subparsers.add_parser("cluster", help="local Kubernetes cluster (host processes, no Docker)")
    sub = cluster.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="start a local cluster and wait until its nodes are Ready")
    up.add_argument("--nodes", type=int, default=2, help="real kubelet nodes (1-8, default 2)")
    up.add_argument("--kwok-nodes", type=int, default=0, help="extra fake nodes run by kwok (default 0)")
    up.add_argument(
        "--feature-gates",
        choices=("defaults", "all"),
        default="all",
        help="defaults, or all: every DRA gate of the release on + alpha/beta resource.k8s.io versions",
    )
    up.add_argument(
        "--k8s-version", default=None, help="Kubernetes minor (1.34) or pinned tag; default: pinned default"
    )
    up.add_argument("--slot", type=int, default=0, help="0-9: port/subnet offset for a second cluster on this host")
    up.add_argument(
        "--no-kube-proxy",
        action="store_true",
        help="do not run kube-proxy (only one cluster per host may; pods then cannot use Services)",
    )
    up.add_argument(
        "--daemonset-paths",
        action="store_true",
        help="each node's /var/lib/kubelet, /var/run/cdi, /etc/cdi are its own (driver charts' DaemonSets work)",
    )
    up.add_argument("--log-dir", default=None, help="component logs (default reports/cluster-logs/<name>)")
    up.set_defaults(func=_up)
    for name, func, text in (
        ("down", _down, "stop the cluster and remove everything it created (logs kept)"),
        ("status", _status, "show phase, versions, feature gates and processes"),
        ("logs", _logs, "print where the component logs are"),
    ):
        p = sub.add_parser(name, help=text)
        p.set_defaults(func=func)
    for p in sub.choices.values():
        p.add_argument("--name", default=DEFAULT_NAME, help=f"cluster name (default {DEFAULT_NAME})")
