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


def test_capacity_and_admin_run_on_the_oldest_release_they_work_together_on():
    """v1.34's kube-scheduler panics on consumable capacity (kubernetes#133705): without --k8s-version that
    combination runs on 1.35 and says why; an explicit 1.34 is kept with the warning; others follow the default."""
    name = "reference-capacity-admin"
    minor, note = combinations.k8s_minor(name, None, "1.34")
    assert minor == "1.35" and "kubernetes#133705" in note and "not the default 1.34" in note
    minor, note = combinations.k8s_minor(name, "1.34", "1.34")
    assert minor == "1.34" and note.startswith("asked for 1.34, kept")
    assert combinations.k8s_minor(name, "1.36", "1.34") == ("1.36", "")
    assert combinations.k8s_minor("reference-status-binding", None, "1.34") == ("1.34", "")


def test_each_child_run_gets_its_minor_and_the_table_names_it(tmp_path, monkeypatch):
    seen = {}

    def execute(plan, common=(), **_kw):
        seen[plan.label] = list(plan.run_args)
        plan.report_dir.mkdir(parents=True, exist_ok=True)
        return RunResult(plan.label, 0, {"suites/x.py::test_a": "passed"}, 1.0, report_dir=str(plan.report_dir))

    monkeypatch.setattr(runs, "execute", execute)
    names = ["reference-status-binding", "reference-capacity-admin"]
    rows = combinations.run_all(tmp_path, names, [], progress=lambda _l: None, default_minor="1.34")
    assert [a[a.index("--k8s-version") + 1] for a in seen.values()] == ["1.34", "1.35"]
    table = combinations.render(rows)
    assert "| reference-capacity-admin | consumable capacity + admin access | 1.35 |" in table
