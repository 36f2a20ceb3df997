"""`dra-conformance setup` and `dra-conformance versions`: build the lab's toolchain, print its pins."""

from __future__ import annotations

import os
import sys
import time

from conformance.core import output
from conformance_lab.toolchain.steps import SetupError, run_steps
from conformance_lab.toolchain.versions import VersionError, as_json, describe, load


def _setup(args) -> int:
    from conformance_lab.toolchain.setup import setup_steps  # noqa: PLC0415 - builders load on demand

    scope = "all" if args.all else "main"
    try:
        elapsed = run_steps(setup_steps(args.k8s_version, set(args.skip), scope))
    except (SetupError, VersionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    start = os.environ.get("DRA_CONFORMANCE_SETUP_START", "")  # the Makefile's start: the venv step counts too
    if start.isdigit():
        elapsed = max(elapsed, time.time() - int(start))
    print(READY[scope].format(minutes=elapsed / 60, seconds=elapsed), flush=True)
    return 0


READY = {
    "main": "ready: make conformance can start (setup took {seconds:.0f} s = {minutes:.1f} min; kind, kwok, helm, "
    "other drivers and their images build on first use, or all now with `dra-conformance setup --all` (`make "
    "setup-all` in a checkout))",
    "all": "ready: everything is built (setup-all took {seconds:.0f} s = {minutes:.1f} min)",
}


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
        "setup",
        help="build what `make conformance` needs into the user's cache: Kubernetes, etcd, containerd, Allure, "
        "pause/busybox images (--all: everything)",
    )
    s.add_argument("--k8s-version", default=None, help="Kubernetes minor to build, e.g. 1.35 (default: pinned)")
    s.add_argument(
        "--skip", action="append", default=[], choices=["debian", "npm", "images", "kind"], help="skip a step"
    )
    s.add_argument(
        "--all",
        action="store_true",
        help="also build what only other paths need (kind node image, kwok, helm, registry, other drivers and their "
        "images; otherwise built on first use): `make setup-all`, CI",
    )
    s.set_defaults(func=_setup)
