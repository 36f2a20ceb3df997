"""Measure local-cluster bring-up (to all nodes Ready + default SA + DRA API) and tear-down times.

Usage: .venv/bin/python benchmarks/cluster_bringup.py [--nodes 2] [--feature-gates all] [--k8s-version 1.34]
       [--repeat 1]
Needs root and cached binaries (make setup). Goal: < 30 s to Ready nodes with cached binaries.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance_lab.local import LocalCluster, LocalClusterConfig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--kwok-nodes", type=int, default=0)
    parser.add_argument("--feature-gates", default="all", choices=("defaults", "all"))
    parser.add_argument("--k8s-version", default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--slot", type=int, default=4, help="port/subnet slot (default 4, beside other clusters)")
    args = parser.parse_args()
    ups, downs = [], []
    for i in range(args.repeat):
        cfg = LocalClusterConfig(
            name="bench",
            nodes=args.nodes,
            kwok_nodes=args.kwok_nodes,
            feature_gates=args.feature_gates,
            k8s_version=args.k8s_version,
            log_dir=Path("reports/bench-logs"),
            slot=args.slot,
            kube_proxy=True,
        )
        cluster = LocalCluster(cfg, progress=print)
        t0 = time.monotonic()
        try:
            handle = cluster.up()
            ups.append(time.monotonic() - t0)
            print(f"run {i + 1}: up {ups[-1]:.1f}s (Kubernetes {handle.k8s_version}, {len(handle.nodes)} nodes)")
        finally:
            t1 = time.monotonic()
            cluster.down()
            downs.append(time.monotonic() - t1)
            print(f"run {i + 1}: down {downs[-1]:.1f}s")
    print(
        f"bring-up to Ready: median {statistics.median(ups):.1f}s (goal < 30 s); "
        f"tear-down: median {statistics.median(downs):.1f}s"
    )
    return 0 if statistics.median(ups) < 30 else 1


if __name__ == "__main__":
    sys.exit(main())
