"""`dra-conformance setup` and `dra-conformance versions`: build the lab's toolchain, print its pins."""

from __future__ import annotations

import sys

from conformance.core import output
from conformance_lab.toolchain.steps import SetupError, run_steps
from conformance_lab.toolchain.versions import VersionError, as_json, describe, load


def _setup(args) -> int:
    from conformance_lab.toolchain.setup import setup_steps  # noqa: PLC0415 - builders load on demand

    try:
        run_steps(setup_steps(args.k8s_version, set(args.skip)))
    except (SetupError, VersionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _versions(args) -> int:
    pins = load()
    if output.wants_json(args):
        output.print_json(as_json(pins))
    else:
        print("\n".join(describe(pins)))
    return 0


def register(sub) -> None:
    """Add the `setup` and `versions` subcommands to an argparse subparsers object."""
    p = sub.add_parser("versions", help="print every pinned version (the lab's versions.toml)")
    output.add_output_option(p)
    p.set_defaults(func=_versions)
    s = sub.add_parser(
        "setup", help="build the lab's toolchain into the user's cache: Kubernetes, etcd, containerd, helm, images"
    )
    s.add_argument("--k8s-version", default=None, help="Kubernetes minor to build, e.g. 1.35 (default: pinned)")
    s.add_argument("--skip", action="append", default=[], choices=["debian", "npm", "images"], help="skip a step")
    s.set_defaults(func=_setup)
