"""Which tests run: deselection by --profile and skip/fail decisions for ``requires(...)``. Pure.

Source: design.md §8 (skips decided at collection, with evidence; a declared-but-broken capability fails).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from conformance.core.capabilities import Capabilities
from conformance.core.errors import ConfigError
from conformance.core.markers import CAPABILITIES, PROFILE_ORDER, profile_includes

DEFAULT_TEST_PROFILE = "standard"


@dataclasses.dataclass(frozen=True)
class Decision:
    """``action``: run | deselect | skip | fail; ``reason``: the evidence text."""

    action: str
    reason: str = ""


def test_profile(marker_names: Iterable[str]) -> str:
    """The profile a test belongs to from its marker names (``standard`` when it has none).

    Raises ConfigError if it has more than one profile marker.
    """
    found = [m for m in PROFILE_ORDER if m in set(marker_names)]
    if len(found) > 1:
        raise ConfigError(
            f"a test has several profile markers {found}",
            source="markers",
            fix="mark each test with exactly one of core, standard, full, disruptive",
        )
    return found[0] if found else DEFAULT_TEST_PROFILE


def decide(
    marker_names: Iterable[str], required: Iterable[str], selected_profile: str, capabilities: Capabilities | None
) -> Decision:
    """The decision for one test. ``required``: capability names from its ``requires`` markers; when
    ``capabilities`` is None (listing without a cluster) only deselection is decided."""
    profile = test_profile(marker_names)
    if not profile_includes(selected_profile, profile):
        return Decision("deselect", f"profile {profile} is not part of --profile {selected_profile}")
    unknown = [c for c in required if c not in CAPABILITIES]
    if unknown:
        raise ConfigError(
            f"unknown capability {unknown[0]!r} in requires()",
            source="markers",
            fix="use a name from conformance/core/markers.py CAPABILITIES",
        )
    if capabilities is None:
        return Decision("run")
    broken = [capabilities.items[c] for c in required if capabilities.items[c].broken]
    if broken:
        return Decision("fail", "; ".join(f"{c.name} declared but not delivered: {c.evidence}" for c in broken))
    missing = [capabilities.items[c] for c in required if not capabilities.items[c].available]
    if missing:
        return Decision("skip", "; ".join(f"{c.name} not available: {c.evidence}" for c in missing))
    return Decision("run")
