"""The tools' `dra-conformance` subcommands, registered through the plugin's ``dra_conformance.commands`` entry
point group: ``bench``, ``validate-suite``, ``matrix``, ``soak``, ``multi-cluster``, ``example-driver-history``,
``feature-combinations``."""

from __future__ import annotations

from conformance_tools import combinations, history, matrix
from conformance_tools.bench import cli as bench_cli
from conformance_tools.endurance import multi, soak
from conformance_tools.validation import cli as validation_cli


def register(sub) -> None:
    """Add every tool subcommand to an argparse subparsers object."""
    for module in (validation_cli, bench_cli, matrix, soak, multi, history, combinations):
        module.register(sub)
