"""The `dra-conformance` command line.

Subcommands live in their own modules, each exposing ``register(subparsers)`` that adds a parser whose
``func(args) -> int`` runs it. A module listed here that does not exist yet is simply not offered.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# (module, description) - each module defines register(subparsers)
SUBCOMMAND_MODULES = (
    "conformance.toolchain.cli",   # versions
    "conformance.clusters.cli",    # cluster up|down|status|logs
    "conformance.runner.cli",      # run, list
    "conformance.reporting.cli",   # report
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(prog="dra-conformance",
                                     description="Conformance and qualification suite for Kubernetes DRA drivers.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dra-conformance` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
