"""`dra-conformance versions`: print the pinned toolchain versions."""

from __future__ import annotations

from conformance.toolchain.versions import describe, load


def register(sub) -> None:
    """Add the `versions` subcommand to an argparse subparsers object."""
    p = sub.add_parser("versions", help="print every pinned version (versions.toml)")
    p.set_defaults(func=lambda args: print("\n".join(describe(load()))) or 0)
