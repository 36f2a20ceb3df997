"""The lab's `dra-conformance` subcommands, registered through the plugin's ``dra_conformance.commands`` entry
point group (the seam a vendor uses): ``setup``, ``versions``, ``cluster``, ``images``, ``install``, ``kind``."""

from __future__ import annotations

from conformance_lab import cluster_cli, images_cli, install_cli
from conformance_lab.kind import cli as kind_cli
from conformance_lab.toolchain import cli as toolchain_cli


def register(sub) -> None:
    """Add every lab subcommand to an argparse subparsers object."""
    for module in (toolchain_cli, cluster_cli, images_cli, install_cli, kind_cli):
        module.register(sub)
