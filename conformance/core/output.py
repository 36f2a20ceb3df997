"""``-o json`` / ``--output json``: the output option of dra-conformance commands (``run``'s verdict, ``list``,
``versions``, ``images list``), kubectl's ``-o`` habit. One helper for the plugin and the lab (which may import
conformance.core but not conformance.cli)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

FORMATS = ("text", "json")


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """Add ``-o/--output text|json`` (dest ``output``, default ``text``) to an argparse parser; another
    value is a usage error (exit 4 under conformance.cli.Parser)."""
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="text",
        help="output format: text for people, json for scripts (one JSON document on stdout) (default: text)",
    )


def wants_json(args: argparse.Namespace) -> bool:
    """Whether ``args`` (a namespace with or without ``output``) asks for JSON."""
    return getattr(args, "output", "text") == "json"


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON and a newline to stdout (non-JSON values, e.g. paths, as strings)."""
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
