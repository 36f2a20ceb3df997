"""`dra-conformance feature-combinations` (tools/conformance_tools/combinations.py): a second run replaces the
tool's own earlier report of a combination (the run refuses a used report dir, and the earlier results must never
be read as this run's: s15, the second run of the day ended 'ERROR (bad input)' listing the first run's failures)."""

from __future__ import annotations

from conformance_tools import combinations
from conformance_tools.validation import runs
from conformance_tools.validation.verdict import RunResult


def test_a_second_run_replaces_the_earlier_report_of_the_combination(tmp_path, monkeypatch):
    name = next(iter(combinations.COMBINATIONS))
    stale = tmp_path / name / "allure-results" / "old-result.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    seen = []

    def execute(plan, common=(), **_kw):
        seen.append((plan.report_dir, (plan.report_dir / "allure-results").exists()))
        plan.report_dir.mkdir(parents=True, exist_ok=True)
        return RunResult(plan.label, 0, {"suites/x.py::test_a": "passed"}, 1.0, report_dir=str(plan.report_dir))

    monkeypatch.setattr(runs, "execute", execute)
    rows = combinations.run_all(tmp_path, [name], [], progress=lambda _line: None)
    assert seen == [(tmp_path / name, False)], "the child run must start on an empty report dir"
    assert not stale.exists() and (tmp_path / name / "outcome.json").is_file()
    assert rows[0].counts == {"passed": 1}, rows
