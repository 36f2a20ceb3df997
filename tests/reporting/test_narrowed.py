"""A narrowed run (pytest arguments selecting a subset of the profile's tests) is never a profile PASS:
summary.json ``narrowed`` / ``qualification`` / ``NARROWED-PASS``, summary.md's headline, the report's exit code
and the matrix's verdict (conformance/reporting/narrowed.py)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from conformance.reporting import build, matrix, narrowed, summary
from tests.reporting.conftest import run_sample, sample_run_json

CUT = {"select": ["-k", "claim_allocated"], "stop": [], "stoppedEarly": False, "collected": 40, "selected": 1}


def _run(tmp_path, narrowing, fail=False, name="run"):
    run = sample_run_json(declared_capabilities=[], narrowing=narrowing)
    run_sample(
        tmp_path / name, "-k", "claim_allocated" if not fail else "claim_allocated or sharing", run_json=run, fail=fail
    )
    verdict = build.generate(tmp_path / name, html_report=False)
    return verdict, json.loads((tmp_path / name / "summary.json").read_text()), (tmp_path / name / "summary.md")


def test_a_narrowed_passing_run_is_narrowed_pass_and_not_a_qualification(tmp_path):
    verdict, data, md = _run(tmp_path, CUT)
    assert (verdict.text, verdict.exit_code, verdict.narrowed) == ("NARROWED-PASS", 0, True)
    assert data["verdict"] == "NARROWED-PASS" and data["verdictReasons"] == []
    assert data["narrowed"] == {
        "args": ["-k", "claim_allocated"],
        "collected": 40,
        "selected": 1,
        "stoppedEarly": False,
        "text": "-k claim_allocated; 1 of 40 tests",
    }
    assert data["qualification"]["qualified"] is False
    assert "not a qualification of profile" in data["qualification"]["text"]
    head = md.read_text().splitlines()[0]
    assert head.startswith("# DRA driver narrowed run: PASS (narrowed: -k claim_allocated; 1 of 40 tests) — not a")
    assert "## Narrowed run: not a qualification" in md.read_text()


def test_a_narrowed_failing_run_stays_fail(tmp_path):
    verdict, data, md = _run(tmp_path, CUT, fail=True)
    assert (verdict.text, verdict.exit_code) == ("FAIL", 1)
    assert data["verdict"] == "FAIL" and data["narrowed"]["args"] == ["-k", "claim_allocated"]
    assert data["qualification"]["qualified"] is False
    assert md.read_text().startswith("# DRA driver narrowed run: FAIL (narrowed: ")


def test_a_whole_profile_run_is_a_qualification(tmp_path):
    whole = {**CUT, "select": [], "stop": ["-x"], "selected": 40}  # -x that never stopped the run narrows nothing
    verdict, data, md = _run(tmp_path, whole)
    assert (verdict.text, data["verdict"], data["narrowed"]) == ("PASS", "PASS", None)
    assert data["qualification"] == {
        "profile": data["profile"],
        "qualified": True,
        "text": f"qualification of profile {data['profile']}: passed",
    }
    assert md.read_text().startswith("# DRA driver qualification: PASS")


def test_run_json_without_a_narrowing_record_reads_as_not_narrowed():
    assert narrowed.from_run({}) is None and narrowed.from_run({"narrowing": None}) is None


@pytest.mark.parametrize(
    "record, text",
    [
        ({"select": ["suites/node"], "collected": 12, "selected": 12}, "suites/node; 12 of 12 tests"),
        ({"select": [], "collected": 12, "selected": 3}, "tests deselected; 3 of 12 tests"),  # e.g. a plugin
        ({"select": [], "stop": ["-x"], "stoppedEarly": True}, "-x; stopped early"),
        ({"select": ["-m", "not slow"], "stop": ["--maxfail", "2"]}, "-m not slow"),
    ],
)
def test_what_narrows_a_run(record, text):
    assert narrowed.from_run({"narrowing": record})["text"] == text


def test_verdict_line_and_qualification():
    cut = narrowed.from_run({"narrowing": CUT})
    assert narrowed.line("NARROWED-PASS", "standard", cut) == (
        "PASS (narrowed: -k claim_allocated; 1 of 40 tests) — not a qualification of profile standard"
    )
    assert narrowed.line("PASS", "standard", None) == "PASS" and narrowed.verdict([], cut) == "NARROWED-PASS"
    assert narrowed.verdict(["x"], cut) == "FAIL" and narrowed.verdict([], [None, None]) == "PASS"
    assert narrowed.qualification("FAIL", "core", None)["qualified"] is False


def test_schema_ties_the_verdict_to_narrowed_and_qualification(tmp_path):
    _, data, _ = _run(tmp_path, CUT)
    for verdict, cut in (("PASS", data["narrowed"]), ("NARROWED-PASS", None)):
        bad = copy.deepcopy(data)
        bad["verdict"], bad["narrowed"] = verdict, cut
        with pytest.raises(jsonschema.ValidationError):
            summary.validate(bad)
    bad = copy.deepcopy(data)
    bad["qualification"]["qualified"] = True
    with pytest.raises(jsonschema.ValidationError):
        summary.validate(bad)


def test_summary_verdict_gives_the_run_command_the_narrowing(tmp_path):
    from conformance.runner.cli import summary_verdict

    run_sample(
        tmp_path / "r",
        "-k",
        "claim_allocated",
        run_json=sample_run_json(declared_capabilities=[], narrowing=CUT),
        fail=False,
    )
    reasons, cut = summary_verdict(tmp_path / "r")
    assert reasons == () and cut["text"] == "-k claim_allocated; 1 of 40 tests"
    assert not (tmp_path / "r" / "summary.json").exists()  # evaluating writes nothing


def _cell(verdict, cut=None):
    return {
        "verdict": verdict,
        "verdictReasons": [] if verdict != "FAIL" else ["1 test(s) failed"],
        "environment": {"kubernetesVersion": "v1.34.4"},
        "driver": {"name": "d"},
        "counts": {"executed": 1, "passed": 1},
        "capabilities": [],
        "narrowed": cut,
    }


def test_a_matrix_with_a_narrowed_cell_is_not_a_qualification():
    cut = narrowed.from_run({"narrowing": CUT})
    data = matrix.table(["1.34", "1.37"], {"1.34": _cell("NARROWED-PASS", cut), "1.37": _cell("PASS")}, {})
    assert data["verdict"] == "NARROWED-PASS" and data["cells"][0]["narrowed"] == cut
    head = matrix.render(data).splitlines()[0]
    assert head == (
        "# DRA driver qualification matrix: PASS (narrowed cells: Kubernetes 1.34: -k claim_allocated; 1 of 40 "
        "tests) — not a qualification"
    )
    assert matrix.table(["1.34"], {"1.34": _cell("PASS")}, {})["verdict"] == "PASS"
    failed = matrix.table(["1.34", "1.37"], {"1.34": _cell("NARROWED-PASS", cut), "1.37": _cell("FAIL")}, {})
    assert failed["verdict"] == "FAIL" and matrix.render(failed).startswith("# DRA driver qualification matrix: FAIL (")


def test_validate_suite_child_runs_narrow_on_purpose_and_still_summarise(tmp_path):
    """validate-suite's child runs select node IDs (narrowed by design): their summaries build as NARROWED-PASS
    and the matrix judges the children by exit code and results, which narrowing leaves as they were."""
    from conformance_tools.validation import report, runs

    plan = runs.Plan("healthy", "", ("suites/smoke/test_smoke.py",), "core", 1.0, (), ("-k", "x"), tmp_path / "h")
    assert runs.command(plan)[-3:] == ["suites/smoke/test_smoke.py", "-k", "x"]
    record = {"select": ["suites/smoke/test_smoke.py", "-k", "x"], "collected": 2, "selected": 1}
    run_sample(
        tmp_path / "h",
        "-k",
        "claim_allocated",
        run_json=sample_run_json(declared_capabilities=[], narrowing=record),
        fail=False,
    )
    report.child_summaries([str(tmp_path / "h")])
    assert not (tmp_path / "h" / "summary-error.txt").exists()
    assert json.loads((tmp_path / "h" / "summary.json").read_text())["verdict"] == "NARROWED-PASS"
