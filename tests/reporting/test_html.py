"""The generated Allure 3 HTML, opened in headless Chromium over http://127.0.0.1 (acceptance of issue 7)."""

from __future__ import annotations

import json
import re

from conformance.reporting import browser, build, history
from tests.reporting.conftest import run_sample

SHARED = "test_pods_sharing_a_claim_see_the_same_device"


def _result_id(run_dir, name: str) -> str:
    for path in (run_dir / "allure-report" / "data" / "test-results").glob("*.json"):
        data = json.loads(path.read_text())
        if data.get("name") == name:
            return data["id"]
    raise AssertionError(f"{name} not in the generated report data of {run_dir}")


def test_report_shows_suites_and_the_failing_tests_attachments(failing_run):
    """Overview lists the suite tree; the failing test's attachments tab lists the evidence pieces.
    Screenshots go into the run directory."""
    with browser.serve(failing_run / "allure-report") as url:
        overview = browser.visible_text(browser.dump_dom(url + "index.html"))
        failing = _result_id(failing_run, SHARED)
        details = browser.visible_text(browser.dump_dom(f"{url}index.html#/{failing}/attachments"))
        shot = browser.screenshot(f"{url}index.html#/{failing}", failing_run / "report-failing-test.png")
    for text in (
        "Kubernetes 1.35",
        "allocation",
        "node",
        "prioritized_list",
        "test_claim_allocated",
        SHARED,
        "kubernetes.version",
        "v1.35.4",
        "Categories",
        "Global Attachments",
    ):
        assert text in overview, f"{text!r} not shown on the report overview:\n{overview[:2000]}"
    for text in (SHARED, "claim.yaml", "events.txt", "driver-log.txt", "application/yaml"):
        assert text in details, f"{text!r} not shown on the failing test's page:\n{details[:2000]}"
    assert shot.stat().st_size > 10_000
    assert re.search(r"Global Attachments\s*\n2\n", overview), "summary.md/summary.json not attached"
    overview_png = build.screenshot(failing_run)
    assert overview_png.parent == failing_run and overview_png.stat().st_size > 10_000


def test_history_carries_over_and_latest_points_at_newest(tmp_path):
    """The second run's report starts from the first run's Allure history; reports/latest follows."""
    first, second = tmp_path / "run-a", tmp_path / "run-b"
    run_sample(first, "-k", "claim_allocated")
    build.generate(first)
    assert history.points(first / "history" / "history.jsonl") == 1
    run_sample(second, "-k", "claim_allocated")
    build.generate(second)
    assert history.points(second / "history" / "history.jsonl") == 2
    assert (tmp_path / "latest").resolve() == second.resolve()
    build.generate(second)  # regenerating does not append the same run twice
    assert history.points(second / "history" / "history.jsonl") == 2


def test_report_command_exit_codes(failing_run, tmp_path, capsys):
    from conformance import cli as main_cli

    assert main_cli.main(["report", str(failing_run), "--no-html"]) == 1
    assert "FAIL" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main_cli.main(["report", str(tmp_path / "empty")]) == 4  # bad input (README), never 2 (INTERRUPTED)
    assert "no allure-results" in capsys.readouterr().err


def test_matrix_cell_history_comes_from_the_same_version_of_the_previous_matrix(tmp_path):
    for matrix in ("m1", "m2"):
        (tmp_path / matrix).mkdir()
        (tmp_path / matrix / history.MATRIX_MARKER).write_text("{}")
        for version in ("1.34", "1.35"):
            hist = tmp_path / matrix / version / "history"
            hist.mkdir(parents=True)
            if matrix == "m1":
                (hist / "history.jsonl").write_text(f'{{"v": "{version}"}}\n')
    assert history.previous(tmp_path / "m2" / "1.35") == tmp_path / "m1" / "1.35" / "history" / "history.jsonl"
    assert history.previous(tmp_path / "m1" / "1.35") is None


def test_single_file_report_is_self_contained_and_does_not_append_history(failing_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(failing_run, run_dir, ignore=shutil.ignore_patterns("allure-report*"))
    build.generate(run_dir, single_file=True, link_latest=False)
    single = run_dir / "allure-report-single"
    assert sorted(p.name for p in single.iterdir() if p.suffix == ".html") == ["index.html"]
    assert not (single / "data").exists()
    assert (
        history.points(run_dir / "history" / "history.jsonl") == history.points(run_dir / "history" / "base.jsonl") + 1
    )


def test_history_from_a_saved_file_carries_over_across_empty_report_folders(tmp_path):
    """CI: each night starts with an empty reports/; ``--history-from`` restores last night's saved history
    (a folder holding history.jsonl, or the file), the report appends one point, regenerating does not."""
    first, second, saved = tmp_path / "night1" / "run", tmp_path / "night2" / "run", tmp_path / "ci-history"
    run_sample(first, "-k", "claim_allocated")
    build.generate(first, history_from=saved)  # first night: the cache folder does not exist yet
    assert history.points(first / "history" / "history.jsonl") == 1
    saved.mkdir()
    (saved / "history.jsonl").write_bytes((first / "history" / "history.jsonl").read_bytes())
    run_sample(second, "-k", "claim_allocated")
    build.generate(second, history_from=saved)
    assert history.points(second / "history" / "history.jsonl") == 2
    build.generate(second, history_from=saved / "history.jsonl")
    assert history.points(second / "history" / "history.jsonl") == 2


def test_history_from_a_malformed_file_is_refused_naming_it(tmp_path, capsys):
    """A file that is not Allure 3 JSONL is bad input: ``report`` exits 4 naming the file and the fix,
    ``run`` refuses it (exit 4) before starting any cluster."""
    from conformance import cli as main_cli

    bad = tmp_path / "history.jsonl"
    bad.write_text('{"ok": 1}\nnot json\n')
    assert history.saved_history(tmp_path / "absent") is None
    assert history.saved_history(tmp_path / "empty-dir-does-not-exist-yet") is None
    run_dir = tmp_path / "run"
    run_sample(run_dir, "-k", "claim_allocated")
    assert main_cli.main(["report", str(run_dir), "--history-from", str(bad)]) == 4
    assert f"--history-from {bad}: line 2 is not a JSON object" in capsys.readouterr().err
    assert main_cli.main(["run", "--cluster", "existing", "--history-from", str(tmp_path)]) == 4
    assert "line 2 is not a JSON object" in capsys.readouterr().err


def test_regenerating_an_older_report_does_not_move_latest_back(tmp_path):
    """issue 22 §2: `report` on an old run must not repoint reports/latest at it."""
    import json

    from conformance.reporting import history

    old, new = tmp_path / "r-old", tmp_path / "r-new"
    for run, started in ((old, 1000.0), (new, 2000.0)):
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"started": started}))
    history.update_latest(new)
    assert history.update_latest(old).resolve() == new.resolve()
    (tmp_path / "r-newest").mkdir()
    ((tmp_path / "r-newest") / "run.json").write_text(json.dumps({"started": 3000.0}))
    assert history.update_latest(tmp_path / "r-newest").resolve() == (tmp_path / "r-newest").resolve()


def test_report_on_a_missing_directory_is_bad_input_on_stderr(tmp_path, capsys):
    from conformance import cli

    assert cli.main(["report", str(tmp_path / "nope")]) == 4
    out = capsys.readouterr()
    assert "nope is not a directory" in out.err and out.out == ""


def test_a_report_dir_named_latest_is_left_as_it_is(tmp_path):
    """s16 new-user review 7: `--report-dir artifacts/latest` must not turn into a link to itself or crash."""
    run = tmp_path / "latest"
    run.mkdir()
    assert history.update_latest(run) == run.resolve() and run.is_dir() and not run.is_symlink()
