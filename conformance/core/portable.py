"""Run records without this machine's paths (issue 22 §5): run.json and summary.json travel (CI artifacts,
a vendor's qualification sent to a customer), so an absolute path in them names a user, a home directory or a
temporary folder and means nothing elsewhere.

:func:`scrub` rewrites every string of a JSON document: the report directory -> ``.``, the current directory
-> ``.``, the roots a caller adds (e.g. the installed package's, stripped to ``conformance/profiles/x.yaml``),
the home directory -> ``~``; the longest prefix wins and matches only whole path components.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def machine_prefixes(report_dir: str | Path, roots: Iterable[tuple[str | Path, str]] = ()) -> list[tuple[str, str]]:
    """``[(absolute prefix, replacement)]``, longest prefix first: ``report_dir`` -> ``.``, the cwd -> ``.``,
    ``roots`` (prefix, replacement; ``""`` strips the prefix and its slash), ``$HOME`` -> ``~``. The filesystem
    root is never a prefix."""
    pairs = [(Path(report_dir).resolve(), "."), (Path.cwd(), "."), *((Path(p), r) for p, r in roots)]
    pairs.append((Path(os.path.expanduser("~")), "~"))
    out = {str(p): r for p, r in reversed(pairs) if str(p) not in ("", "/") and Path(p).is_absolute()}
    return sorted(out.items(), key=lambda kv: len(kv[0]), reverse=True)


def scrub(data: Any, prefixes: list[tuple[str, str]]) -> Any:
    """``data`` (JSON: dict, list, str, number...) with each absolute ``prefix`` in its strings (keys too)
    replaced as :func:`machine_prefixes` says; other values unchanged. ``/home/u/x`` -> ``~/x``, the report
    dir itself -> ``.``."""
    if not prefixes:
        return data
    pattern = re.compile("|".join(f"({re.escape(p)})(/|(?![\\w.-]))" for p, _ in prefixes))
    table = dict(prefixes)

    def fix(text: str) -> str:
        def one(m: re.Match) -> str:
            prefix = next(g for g in m.groups()[::2] if g is not None)
            slash = m.group(m.lastindex) if m.lastindex and m.group(m.lastindex) == "/" else ""
            new = table[prefix]
            return new + slash if new else ""

        return pattern.sub(one, text)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return fix(value)
        if isinstance(value, dict):
            return {fix(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    return walk(data)
