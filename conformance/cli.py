"""The `dra-conformance` command line.

Subcommands come from modules registered under the entry point group ``dra_conformance.commands`` (value: a
module exposing ``register(subparsers)`` that adds parsers whose ``func(args) -> int`` runs them). The plugin
registers ``run``/``list``, ``report``, ``images list`` and ``completion``; the lab (``dra-conformance-lab``)
adds ``setup``, ``versions``, ``cluster``, ``images`` build/export/import/cache, ``install`` and ``kind``; the
tools (``dra-conformance-tools``) add ``bench``, ``validate-suite`` and ``matrix``. A vendor adds its own the
same way. Pattern: importlib.metadata entry points (PyPA entry points specification).

``--version`` prints the version of each installed distribution and, from a checkout, the git commit. A closed
pipe (``dra-conformance list | head -1``) ends the command quietly with exit 141 (128 + SIGPIPE, the shell's
code for a process a closed pipe stopped). SIGTERM interrupts every command as Ctrl-C does (cleanup, then exit 2;
``conformance.core.commands.sigterm_as_interrupt``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import re
import subprocess
import sys

from conformance import shipped
from conformance.core import commands
from conformance.runner.registry import install_hint

GROUP = "dra_conformance.commands"
EXIT_BAD_INPUT = 4
EXIT_INTERRUPTED = 2  # Ctrl-C or SIGTERM (every command: _dispatch)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13)
FIRST = ("run", "report", "preflight", "cleanup", "profile", "images")  # the plugin's own, first in --help
DISTRIBUTIONS = ("dra-conformance", "dra-conformance-lab", "dra-conformance-tools")
# commands of the sibling distributions, named when they are not installed
ELSEWHERE = {
    **dict.fromkeys(("setup", "versions", "cluster", "install", "kind"), "dra-conformance-lab"),
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


def plain(text: str) -> str:
    """Help text without Sphinx/reStructuredText markup (module docstrings serve as descriptions):
    ``:func:`~a.b.c``` -> ``c``, ``:mod:`a.b``` -> ``a.b``, ``:ref:`text <target>``` -> ``text``, a literal in
    double backticks -> single backticks (as commands are quoted in help text)."""
    text = re.sub(
        r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)\s*(?:<[^`>]*>)?`",
        lambda m: m[1].split(".")[-1] if "~" in m[0] else m[1],
        text,
    )
    return text.replace("``", "`")


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit 4 (bad input), as every dra-conformance command documents, not 2 (which
    means interrupted), and whose help has no Sphinx markup (:func:`plain`); its subcommands' parsers are of
    this class too."""

    def format_help(self) -> str:
        return plain(super().format_help())

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _commit() -> str | None:
    """The checkout's commit (``8a67219``, ``-dirty`` with uncommitted changes), None outside a checkout or
    without git."""
    if not shipped.in_checkout():
        return None
    git = ["git", "-C", str(shipped.SOURCE_ROOT)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def version_text() -> str:
    """``--version``: ``dra-conformance 0.1.0 (commit 8a67219)`` and one line per other installed distribution
    (lab, tools), from importlib.metadata."""
    lines = []
    for dist in DISTRIBUTIONS:
        try:
            lines.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    commit = _commit()
    if commit and lines:
        lines[0] += f" (commit {commit})"
    return "\n".join(lines)


class _Version(argparse.Action):
    """``--version``: computed only when asked (it may run git)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand (``parser.commands``: their names)."""
    parser = Parser(
        prog="dra-conformance",
        description="Conformance and qualification suite for Kubernetes DRA drivers.",
        epilog="`dra-conformance COMMAND --help` describes a command.",
    )
    parser.add_argument("--version", action=_Version, help="print the version (and git commit) and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for module in command_modules():
        module.register(sub)
    _add_completion(sub, parser)
    parser.set_defaults(commands=frozenset(sub.choices))
    return parser


def _add_completion(sub, root: argparse.ArgumentParser) -> None:
    """``completion bash|zsh``: a shell completion script for every command and option, generated from the
    argparse parsers by shtab (static: the shell never starts Python to complete)."""
    p = sub.add_parser(
        "completion",
        help="print a bash or zsh completion script",
        description="Print a shell completion script. bash: `source <(dra-conformance completion bash)` (or save "
        "it under ~/.local/share/bash-completion/completions/dra-conformance); zsh: save "
        "`dra-conformance completion zsh` as _dra-conformance in a folder of your $fpath.",
    )
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    p.set_defaults(func=lambda args: _completion(root, args.shell))


def _completion(root: argparse.ArgumentParser, shell: str) -> int:
    """Print the completion script of ``root`` for ``shell``; 4 (naming the fix) when shtab is missing."""
    try:
        import shtab  # noqa: PLC0415 - only this command needs it
    except ImportError:
        print("error: shell completion needs the shtab package: pip install shtab", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(shtab.complete(root, shell=shell))
    return 0


def _quiet_broken_pipe() -> int:
    """After a reader closed stdout (``| head``): point stdout at /dev/null so the interpreter's final flush
    does not fail again, and return 141."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dra-conformance` console script; returns the process exit code (4 for a command of
    a distribution that is not installed, naming it; 141 when stdout was closed by its reader)."""
    try:
        try:
            return _dispatch(sys.argv[1:] if argv is None else argv)
        finally:  # also after --help's SystemExit: a closed pipe shows here, not in the interpreter's exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _dispatch(argv: list[str]) -> int:
    parser = build_parser()
    if not argv:  # kubectl's and helm's habit: the commands, not an error
        parser.print_help()
        return 0
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted in ELSEWHERE and wanted not in parser.get_default("commands"):
        print(f"error: `dra-conformance {wanted}` comes with {ELSEWHERE[wanted]}: {install_hint(ELSEWHERE[wanted])}")
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    with commands.sigterm_as_interrupt():  # SIGTERM cleans up as Ctrl-C does, in every command
        try:
            return int(args.func(args) or 0)
        except KeyboardInterrupt:  # a command that cleaned up (its finally/except blocks ran) and let it through
            print(f"dra-conformance {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
