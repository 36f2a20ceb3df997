"""`dra-conformance kind build-node-image | delete NAME`: the offline kind node image behind ``--cluster kind``,
and deleting a kept kind cluster (with the host clean-up of :mod:`conformance_lab.kind.host`).

Builds (or finds cached) nerdctl, kubeadm, coredns and crictl, the Debian base layer and the node image for
one Kubernetes version, and prints the image reference and archive (``--json`` for a machine-readable line).
Exit codes: 0 built or cached, 1 a step failed (the message names the step and the fix), 4 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from conformance_lab.toolchain.images.oci import ImageError
from conformance_lab.toolchain.kindnode import build
from conformance_lab.toolchain.steps import SetupError
from conformance_lab.toolchain.versions import VersionError


def _build_node_image(args: argparse.Namespace) -> int:
    start = time.monotonic()
    try:
        ref, path = build.node_image(args.k8s_version)
    except VersionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except (SetupError, ImageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    row = {"ref": ref, "archive": str(path), "size": path.stat().st_size, "seconds": round(time.monotonic() - start, 1)}
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{ref}\n  {path} ({row['size'] / 2**20:.0f} MiB, {row['seconds']} s)")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415

    from conformance_lab.kind import host as kindhost  # noqa: PLC0415
    from conformance_lab.kind import provider as kind  # noqa: PLC0415

    removed = kind.delete(args.name, kindhost.KindRuntime(Path(args.log_dir)))
    print("\n".join([f"deleted kind cluster {args.name}", *removed]))
    return 1 if removed and removed[0].startswith("kind delete failed") else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``kind build-node-image`` to the top-level subparsers."""
    kind = sub.add_parser("kind", help="kind clusters without Docker: build the offline node image")
    ksub = kind.add_subparsers(dest="kind_command", required=True, metavar="KIND_COMMAND")
    b = ksub.add_parser("build-node-image", help="build (or find cached) the kind node image for a Kubernetes version")
    b.add_argument("--k8s-version", default=None, help="Kubernetes minor or tag, e.g. 1.34 (default: pinned)")
    b.add_argument("--json", action="store_true", help="print one JSON line: ref, archive, size, seconds")
    b.set_defaults(func=_build_node_image)
    d = ksub.add_parser("delete", help="delete a kind cluster (e.g. one kept with --keep-cluster) and clean the host")
    d.add_argument("name", help="the kind cluster name (--kind-name)")
    d.add_argument("--log-dir", default="/tmp", help="where our containerd's log goes (default /tmp)")
    d.set_defaults(func=_delete)
