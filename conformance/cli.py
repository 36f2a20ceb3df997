"""The `dra-conformance` command line.

Subcommands live in their own modules, each exposing ``register(subparsers)`` that adds a parser whose
``func(args) -> int`` runs it. :data:`SUBCOMMANDS` lists them in ``--help`` order; a new subcommand module is
imported here and added to it.
"""

from __future__ import annotations

import argparse
import sys

from conformance.bench import cli as bench_cli
from conformance.clusters import cli as cluster_cli
from conformance.clusters import images_cli, kind_cli
from conformance.reporting import cli as report_cli
from conformance.runner import cli as run_cli
from conformance.runner import install_cli
from conformance.toolchain import cli as toolchain_cli
from conformance.validation import cli as validation_cli

SUBCOMMANDS = (
    toolchain_cli,  # versions
    cluster_cli,  # cluster up|down|status|logs
    images_cli,  # images list|build|export|import
    run_cli,  # run, list
    report_cli,  # report
    validation_cli,  # validate-suite
    bench_cli,  # bench
    install_cli,  # install (a local cluster with a driver from its chart, kept for existing-cluster runs)
    kind_cli,  # kind build-node-image
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="dra-conformance", description="Conformance and qualification suite for Kubernetes DRA drivers."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dra-conformance` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
