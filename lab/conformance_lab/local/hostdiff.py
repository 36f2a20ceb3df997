"""The difference between two host-state snapshots (:mod:`conformance_lab.local.hoststate`), each changed line
attributed (:mod:`conformance_lab.local.hostowners`) to a cluster alive at either capture or left unexplained.

A change counts (``Change.counts``) when nobody alive owns it, or when its owner is one of the clusters under
measurement (``ours``): a soak compares snapshots taken while its own cluster runs, and growth there is what it
measures. Changes owned by other clusters on a shared host are listed apart and never fail a comparison.
"""

from __future__ import annotations

import collections
import dataclasses

from conformance_lab.local.hostowners import owner_of
from conformance_lab.local.hoststate import SECTIONS, Snapshot


@dataclasses.dataclass(frozen=True)
class Change:
    """One line present only before (``sign`` '-') or only after ('+'); ``owner`` '' when unexplained."""

    section: str
    sign: str
    line: str
    owner: str
    counts: bool

    def render(self) -> str:
        """``<section> <sign> <line>  [owner]``."""
        return f"{self.section:<9} {self.sign} {self.line}" + (f"  [{self.owner}]" if self.owner else "")


def _owned_by(owner: str, ours: frozenset[str]) -> bool:
    return any(owner == f"cluster {n}" or owner == f"kube-proxy of {n}" for n in ours)


def diff(before: Snapshot, after: Snapshot, ours: frozenset[str] = frozenset()) -> list[Change]:
    """Every line whose count differs between the snapshots (lines are compared as multisets per section; a
    section missing from one snapshot counts as empty), owners looked up in both snapshots' owners."""
    owners = {**before.owners, **after.owners}
    changes = []
    for section in SECTIONS:
        old = collections.Counter(before.sections.get(section, []))
        new = collections.Counter(after.sections.get(section, []))
        for sign, lines in (("-", old - new), ("+", new - old)):
            for line, n in sorted(lines.items()):
                owner = owner_of(line, owners)
                counts = not owner or _owned_by(owner, ours)
                changes.extend([Change(section, sign, line, owner, counts)] * n)
    return changes


def summary(changes: list[Change]) -> dict[str, int]:
    """``{section: number of counted changes}`` for sections with any."""
    return dict(collections.Counter(c.section for c in changes if c.counts))


def report(before: Snapshot, after: Snapshot, changes: list[Change], limit: int = 200) -> list[str]:
    """Human-readable lines: the clusters alive at each capture, the counted changes, then the others by owner."""
    counted = [c for c in changes if c.counts]
    others = [c for c in changes if not c.counts]
    lines = [
        f"host state {before.taken} -> {after.taken}",
        f"  alive before: {', '.join(before.owners) or 'none'}",
        f"  alive after:  {', '.join(after.owners) or 'none'}",
    ]
    if counted:
        lines.append(f"{len(counted)} change(s) not explained by another cluster alive at either capture:")
        lines += ["  " + c.render() for c in counted[:limit]]
        if len(counted) > limit:
            lines.append(f"  ... {len(counted) - limit} more")
    else:
        lines.append("no change left on the host (beyond other clusters alive at either capture)")
    if others:
        per_owner = collections.Counter(c.owner for c in others)
        lines.append(
            "set aside, owned by others alive at a capture: " + ", ".join(f"{o} {n}" for o, n in per_owner.items())
        )
    return lines
