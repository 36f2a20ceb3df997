"""What ``dra-conformance list`` prints after the test IDs: how many tests the profile selects per area, the
five mission areas first (:data:`conformance.core.markers.MISSION_AREAS`), so a user sees before any run
whether the profile covers every area they qualify a driver on (issue: the main job covers every mission
area)."""

from __future__ import annotations

from collections import Counter

from conformance.core import markers


def area_counts(items) -> dict[str, int]:
    """``{area marker name: selected tests}`` over pytest ``items`` (anything with ``iter_markers()``); every
    declared area is present, 0 when nothing selects it; a test with two area markers counts in both."""
    areas = [m.name for m in markers.AREAS]
    counts = Counter(m.name for item in items for m in item.iter_markers() if m.name in areas)
    return {a: counts.get(a, 0) for a in areas}


def render(counts: dict[str, int], profile: str) -> str:
    """The per-area table printed by ``list``: mission areas first, marked, then the other areas."""
    lines = [f"tests per area (profile {profile}; * = mission area):"]
    ordered = list(markers.MISSION_AREAS) + [a for a in counts if a not in markers.MISSION_AREAS]
    width = max(len(a) for a in ordered)
    for area in ordered:
        mark = "*" if area in markers.MISSION_AREAS else " "
        note = "  <- not covered" if area in markers.MISSION_AREAS and not counts.get(area) else ""
        lines.append(f"  {mark} {area:<{width}}  {counts.get(area, 0):>4}{note}")
    return "\n".join(lines)


def pytest_collection_finish(session) -> None:
    """pytest hook (this module is loaded with ``-p conformance.runner.listing`` by ``list``): print
    :func:`render` for the items the profile selected."""
    print(render(area_counts(session.items), session.config.getoption("profile")))
