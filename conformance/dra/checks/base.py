"""The one result type of every invariant check, and how a list of them reads in an assertion message."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken rule on one object.

    ``rule``: stable id, ``<area>.<name>`` (e.g. ``slice.node-owner``), used in reports and faults.yaml;
    ``obj``: ``Kind/namespace/name`` or ``Kind/name`` of the offending object;
    ``message``: what is wrong, with the values seen;
    ``source``: the upstream rule (API field, KEP section, upstream test name).
    """

    rule: str
    obj: str
    message: str
    source: str = ""

    def __str__(self) -> str:
        src = f" [{self.source}]" if self.source else ""
        return f"{self.rule}: {self.obj}: {self.message}{src}"


def describe(violations: Iterable[Violation]) -> str:
    """One line per violation (``rule: object: message [source]``), or ``"no violations"``."""
    lines = [str(v) for v in violations]
    return "\n".join(lines) if lines else "no violations"
