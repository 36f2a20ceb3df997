"""`dra-conformance cluster up|down|status|logs|preflight|host-state` for the local cluster provider."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from conformance.core.errors import ClusterUnavailable, ConformanceError

DEFAULT_NAME = "dra"


def _print(line: str) -> None:
    print(line, flush=True)


def _config(args: argparse.Namespace, slot: int):
    from conformance_lab.local import LocalClusterConfig  # noqa: PLC0415 - CLI loads the provider on use

    return LocalClusterConfig(
        name=args.name,
        nodes=args.nodes,
        kwok_nodes=args.kwok_nodes,
        k8s_version=args.k8s_version,
        feature_gates=args.feature_gates,
        log_dir=Path(args.log_dir) if args.log_dir else None,
        slot=slot,
        kube_proxy=False if args.no_kube_proxy else None,
        daemonset_paths=args.daemonset_paths,
    )


def start(args: argparse.Namespace, progress=_print):
    """Start the cluster ``args`` describe; return its LocalClusterHandle. Without ``--slot`` (``args.slot``
    None) the lowest slot no other local cluster on this host records (0..9, as a run chooses among 2..9); when
    another ``cluster up`` records that slot first (SlotTaken, before anything starts) the next free one is
    tried. Raises ClusterUnavailable (no free slot, host problems) or ConfigError."""
    from conformance_lab.local import LocalCluster  # noqa: PLC0415 - CLI loads the provider on use
    from conformance_lab.local.provider import LAST_SLOT, free_slot  # noqa: PLC0415
    from conformance_lab.local.state import SlotTaken  # noqa: PLC0415

    if args.slot is not None:
        return LocalCluster(_config(args, args.slot), progress=progress).up()
    for _attempt in range(LAST_SLOT + 1):
        slot = free_slot(first=0, exclude=args.name)
        progress(f"slot {slot}: the lowest no other local cluster on this host records")
        try:
            return LocalCluster(_config(args, slot), progress=progress).up()
        except SlotTaken as exc:
            progress(f"{exc}: choosing another slot")
    raise ClusterUnavailable("no free local cluster slot: every slot was taken while choosing one")


def _up(args: argparse.Namespace) -> int:
    try:
        t0 = time.monotonic()
        handle = start(args)
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


def _preflight(args: argparse.Namespace) -> int:
    """`cluster preflight`: the host limits, ports and cached binaries the cluster ``args`` describe needs,
    checked without starting or changing anything. Exit 0 when it could start, 1 naming each fix, 4 bad input."""
    from conformance_lab.local import hostlimits, preflight  # noqa: PLC0415 - CLI loads the provider on use
    from conformance_lab.local.cluster import resolve_version  # noqa: PLC0415
    from conformance_lab.local.config import layout_for  # noqa: PLC0415
    from conformance_lab.local.provider import free_slot  # noqa: PLC0415

    try:
        slot = args.slot if args.slot is not None else free_slot(first=0, exclude=args.name)
        cfg = _config(args, slot).validate()
        tag = resolve_version(cfg.k8s_version)
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    limits, usage = hostlimits.read_limits(), hostlimits.read_usage(os.geteuid())
    for line in [f"slot {slot}, Kubernetes {tag}", *hostlimits.summary(cfg.nodes, limits, usage)]:
        print(f"info    {line}")
    problems = hostlimits.problems(cfg.nodes, limits, usage) + preflight.check_ports(layout_for(cfg).all_ports())
    problems += preflight.find_binaries(tag)[1]
    for line in problems:
        print(f"missing {line}")
    print("ok: the host can start this cluster" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


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
        f"API server {state.node_ip} (cluster network namespace; host 127.0.0.1 forwarded)"
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


def _host_state(args: argparse.Namespace) -> int:
    """`cluster host-state`: with ``--save F`` write a snapshot of what clusters could leave on the host; with
    ``--diff F`` compare F with now (exit 1 when something changed that no cluster alive at either moment owns,
    or that a cluster named by ``--ours`` owns); neither: the sections' sizes and the owners alive now."""
    from conformance_lab.local import hostdiff, hoststate  # noqa: PLC0415 - CLI loads the provider on use

    try:
        before = hoststate.Snapshot.load(Path(args.diff)) if args.diff else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    now = hoststate.capture()
    if args.save:
        now.save(Path(args.save))
        print(f"host state saved to {args.save} ({sum(map(len, now.sections.values()))} lines)")
    if before is None:
        for section, lines in now.sections.items():
            print(f"  {section:<10} {len(lines)} line(s)")
        print(f"  alive: {', '.join(now.owners) or 'none'}")
        return 0
    changes = hostdiff.diff(before, now, ours=frozenset(args.ours))
    for line in hostdiff.report(before, now, changes):
        print(line)
    return 1 if any(c.counts for c in changes) else 0


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
    up.add_argument(
        "--slot",
        type=int,
        default=None,
        help="0-9: port/subnet offset of this cluster (default: the lowest slot no other local cluster uses)",
    )
    up.add_argument(
        "--no-kube-proxy",
        action="store_true",
        help="do not run kube-proxy on the nodes (saves CPU; pods then cannot use Services)",
    )
    up.add_argument(
        "--daemonset-paths",
        action="store_true",
        help="each node's /var/lib/kubelet, /var/run/cdi, /etc/cdi are its own (driver charts' DaemonSets work)",
    )
    up.add_argument("--log-dir", default=None, help="component logs (default reports/cluster-logs/<name>)")
    up.set_defaults(func=_up)
    check = sub.add_parser(
        "preflight", help="check host limits (inotify, tasks), ports and cached binaries for `up`; starts nothing"
    )
    check.add_argument("--nodes", type=int, default=2, help="real kubelet nodes (1-8, default 2)")
    check.add_argument("--k8s-version", default=None, help="Kubernetes minor or pinned tag; default: pinned default")
    check.add_argument("--slot", type=int, default=None, help="0-9 (default: the lowest free slot)")
    check.set_defaults(
        func=_preflight, kwok_nodes=0, feature_gates="all", log_dir=None, no_kube_proxy=False, daemonset_paths=False
    )
    state = sub.add_parser("host-state", help="snapshot what clusters could leave on the host, or diff with one")
    state.add_argument("--save", metavar="FILE", help="write the snapshot (JSON) to FILE")
    state.add_argument(
        "--diff", metavar="FILE", help="compare the snapshot in FILE with the host now; exit 1 on a change"
    )
    state.add_argument(
        "--ours", action="append", default=[], metavar="NAME", help="a cluster alive now whose changes count (repeat)"
    )
    state.set_defaults(func=_host_state, name=DEFAULT_NAME)
    for name, func, text in (
        ("down", _down, "stop the cluster and remove everything it created (logs kept)"),
        ("status", _status, "show phase, versions, feature gates and processes"),
        ("logs", _logs, "print where the component logs are"),
    ):
        p = sub.add_parser(name, help=text)
        p.set_defaults(func=func)
    for p in (c for n, c in sub.choices.items() if n != "host-state"):
        p.add_argument("--name", default=DEFAULT_NAME, help=f"cluster name (default {DEFAULT_NAME})")
