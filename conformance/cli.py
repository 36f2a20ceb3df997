"""The `dra-conformance` command line.

Subcommands come from modules registered under the entry point group ``dra_conformance.commands`` (value: a
module exposing ``register(subparsers)`` that adds parsers whose ``func(args) -> int`` runs them). The plugin
registers ``run``/``list`` and ``report``; the lab (``dra-conformance-lab``) adds ``setup``, ``versions``,
``cluster``, ``images``, ``install`` and ``kind``; the tools (``dra-conformance-tools``) add ``bench``,
``validate-suite`` and ``matrix``. A vendor adds its own the same way. Pattern: importlib.metadata entry
points (PyPA entry points specification).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

GROUP = "dra_conformance.commands"
EXIT_BAD_INPUT = 4
FIRST = ("run", "report", "preflight", "cleanup")  # the plugin's own, first in --help
# commands of the sibling distributions, named when they are not installed
ELSEWHERE = {
    **dict.fromkeys(("setup", "versions", "cluster", "images", "install", "kind"), "dra-conformance-lab"),
    **dict.fromkeys(("bench", "validate-suite", "matrix"), "dra-conformance-tools"),
}


def command_modules() -> list:
    """The registered command modules: the plugin's first, then the others by entry point name. A module that
    fails to import is reported on stderr and left out (the rest of the CLI keeps working)."""
    eps = sorted(
        importlib.metadata.entry_points(group=GROUP),
        key=lambda e: (FIRST.index(e.name) if e.name in FIRST else len(FIRST), e.name),
    )
    modules = []
    for ep in eps:
        try:
            modules.append(ep.load())
        except Exception as exc:  # noqa: BLE001 - a broken extension must not take the CLI down
            print(f"warning: command module {ep.name} ({ep.value}) failed to load: {exc}", file=sys.stderr)
    return modules


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit 4 (bad input), as every dra-conformance command documents, not 2 (which
    means interrupted); its subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand (``parser.commands``: their names)."""
    parser = Parser(
        prog="dra-conformance", description="Conformance and qualification suite for Kubernetes DRA drivers."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules():
        module.register(sub)
    parser.set_defaults(commands=frozenset(sub.choices))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dra-conformance` console script; returns the process exit code (4 for a command of
    a distribution that is not installed, naming it)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted in ELSEWHERE and wanted not in parser.get_default("commands"):
        print(f"error: `dra-conformance {wanted}` comes with {ELSEWHERE[wanted]}: pip install {ELSEWHERE[wanted]}")
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
