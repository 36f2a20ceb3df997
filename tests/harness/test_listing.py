"""`dra-conformance list` prints the tests a profile selects per area, mission areas first."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.runner import listing


class _Item:
    def __init__(self, *names: str) -> None:
        self._marks = [SimpleNamespace(name=n) for n in names]

    def iter_markers(self):
        return iter(self._marks)


def test_counts_every_area_and_flags_an_uncovered_mission_area():
    items = [_Item("allocation", "standard"), _Item("allocation"), _Item("node", "publishing")]
    counts = listing.area_counts(items)
    assert counts["allocation"] == 2 and counts["node"] == 1 and counts["publishing"] == 1 and counts["api_v1"] == 0
    text = listing.render(counts, "core")
    lines = text.splitlines()
    assert lines[0].startswith("tests per area (profile core")
    assert [ln.split()[1] for ln in lines[1:6]] == [
        "api_v1",
        "allocation",
        "prioritized_list",
        "admin_access",
        "podresources",
    ]
    assert "api_v1" in next(ln for ln in lines if "not covered" in ln)
    assert not any("not covered" in ln for ln in lines if "allocation" in ln)
