"""The matrix report in ``reports/validate-suite/<id>/`` (``reports/validate-suite/latest`` points at the newest):

* ``summary.json`` (kind ``fault-matrix``, schema ``summary.schema.json`` next to this module): the detection
  matrix (fault x test: caught / missed / not-run / unexpected-fail / passed), the detection rate, the time
  of each fault's run and of the whole matrix, the healthy runs and the verdict with its reasons;
* ``summary.md``: the same as tables;
* ``allure-results/`` + ``allure-report/``: one Allure test per fault ("fault X is detected", passed when every
  expected test failed) and per healthy run, each with its row as an attachment; summary.md and summary.json
  as the report's global attachments;
* ``runs/<fault>/`` and ``runs/healthy/``: each child run's own results, log, evidence and summary.

Reuses :mod:`conformance.reporting` (the run summary builder for each child, the Allure CLI wrapper, history
and the ``latest`` link). Source: issue 11 "Fault matrix"; reporting.md §2.3 (Allure 3).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import pathlib
import uuid

import jsonschema

from conformance.reporting import build, history, html, runinfo, summary
from conformance_tools.validation import verdict

SCHEMA_PATH = pathlib.Path(__file__).with_name("summary.schema.json")
REPORTS_ROOT = pathlib.Path(__file__).resolve().parents[2] / "reports"
SCHEMA_VERSION = "1"
SYMBOLS = {
    verdict.CAUGHT: "caught",
    verdict.ACCIDENT: "**by accident**",
    verdict.MISSED: "**MISSED**",
    verdict.NOT_RUN: "**not run**",
    verdict.UNEXPECTED: "fails (not listed)",
    verdict.PASSED: "·",
}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def document(decided: dict, *, report_id: str, started: str, duration_s: float, faults_file: str, **info) -> dict:
    """summary.json content: :func:`verdict.decide`'s output plus identity, timing and run options
    (``info``: e.g. ``kubernetesVersion``, ``interrupted``), validated against the schema."""
    data = {
        "schemaVersion": SCHEMA_VERSION,
        "kind": "fault-matrix",
        "reportId": report_id,
        "tool": {"name": "dra-conformance", "version": summary.tool_version()},
        "generatedAt": _now(),
        "startedAt": started,
        "durationS": round(duration_s, 1),
        "faultsFile": faults_file,
        "options": info,
        **decided,
    }
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return data


def _cell(text) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")[:300]


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def render(data: dict) -> str:
    """summary.md: verdict, detection rate, per-fault table, the fault x test matrix, healthy runs."""
    det = data["detection"]
    out = [
        f"# Suite validation (fault-detection matrix): {data['verdict']}",
        "",
        f"- Matrix: `{data['reportId']}` started {data['startedAt']}, {data['durationS']:.0f} s in all",
        f"- Detection rate: {det['caught']}/{det['faults']} faults caught with their symptom ({det['rate']:.0%})"
        + (f"; not caught: {', '.join(det['notCaught'])}" if det["notCaught"] else ""),
        "- Faults by status: " + ", ".join(f"{k} {v}" for k, v in det.get("byStatus", {}).items()),
        f"- Faults file: `{data['faultsFile']}`",
        "",
    ]
    if data["verdictReasons"]:
        out += ["## Why it fails", ""] + [f"- {_cell(r)}" for r in data["verdictReasons"]] + [""]
    out += ["## Faults", "", "| Fault | Class | Symptom | Status | Caught by | By accident | Missed / not run "]
    out[-1] += "| Also fails | Run | Time (s) |"
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in data["faults"]:
        accidents = "; ".join(f"{_short(t)} ({why.split(':')[0]})" for t, why in row.get("accidents", {}).items())
        out.append(
            f"| {row['name']} | {_cell(row['class'])} | `{_cell(row.get('symptom', ''))}` | {row['status']} "
            f"| {_cell(', '.join(map(_short, row['caughtBy'])) or '-')} | {_cell(accidents) or '-'} "
            f"| {_cell(', '.join(map(_short, row['missed'] + row['notRun'])) or '-')} "
            f"| {_cell(', '.join(map(_short, row['unexpectedFail'])) or '-')} "
            f"| {row['ended']} | {row['durationS']:.0f} |"
        )
    tests = data["tests"]
    if tests:
        out += ["", "## Detection matrix (fault x test)", ""]
        out += ["| Fault | " + " | ".join(f"T{i + 1}" for i in range(len(tests))) + " |"]
        out += ["|---|" + "---|" * len(tests)]
        for row in data["faults"]:
            marks = [SYMBOLS.get(row["cells"].get(t, ""), "") for t in tests]
            out.append(f"| {row['name']} | " + " | ".join(marks) + " |")
        out += ["", "Tests: " + "; ".join(f"T{i + 1} `{t}`" for i, t in enumerate(tests)), ""]
        out.append(
            "Cells: caught = expected to fail and failed with the fault's symptom; **by accident** = expected to "
            "fail and failed, but without the symptom (an unrelated timeout, leak, crash or message: not caught); "
            "**MISSED** = expected to fail but passed; "
            "**not run** = expected but skipped or not selected; fails (not listed) = failed without being "
            "expected; · = passed; empty = not selected."
        )
    out += ["", "## Healthy driver", "", "| Run | Ended | Tests | Failures | Time (s) |", "|---|---|---|---|---|"]
    for row in data["healthy"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(row["counts"].items())) or "none"
        out.append(
            f"| {row['label']} | {row['ended']} | {counts} | {_cell(', '.join(row['failures']) or '-')} "
            f"| {row['durationS']:.0f} |"
        )
    return "\n".join(out) + "\n"


def child_summaries(run_dirs: list[str]) -> None:
    """Build summary.json/summary.md/junit.xml (no HTML, no ``latest`` link) of each child run that has
    results; a run without run.json or results is left as it is."""
    for run_dir in run_dirs:
        path = pathlib.Path(run_dir)
        if (path / "allure-results").is_dir() and (path / "run.json").is_file():
            try:
                build.generate(path, html_report=False, link_latest=False)
            except Exception as exc:  # noqa: BLE001 - the matrix verdict stands without a child's summary
                (path / "summary-error.txt").write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")


def _allure_result(
    results_dir: pathlib.Path,
    name: str,
    status: str,
    message: str,
    labels: dict,
    body: str,
    duration_s: float,
    parameters: dict[str, str],
) -> None:
    uid = str(uuid.uuid4())
    attachment = f"{uid}-attachment.md"
    (results_dir / attachment).write_text(body, encoding="utf-8")
    stop = int(datetime.datetime.now(datetime.UTC).timestamp() * 1000)
    history_id = hashlib.md5(f"validate-suite|{name}".encode()).hexdigest()  # noqa: S324 - an id, not security
    result = {
        "uuid": uid,
        "historyId": history_id,
        "testCaseId": history_id,
        "name": name,
        "fullName": f"validate-suite.{name}",
        "status": status,
        "statusDetails": {"message": message} if message else {},
        "stage": "finished",
        "start": stop - int(duration_s * 1000),
        "stop": stop,
        "labels": [{"name": k, "value": v} for k, vs in labels.items() for v in ([vs] if isinstance(vs, str) else vs)],
        "parameters": [{"name": k, "value": v} for k, v in parameters.items()],
        "attachments": [{"name": "matrix row", "source": attachment, "type": "text/markdown"}],
    }
    (results_dir / f"{uid}-result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")


def _fault_body(row: dict) -> str:
    lines = [
        f"# fault {row['name']}: {row['status']}",
        "",
        f"- class: {row['class']}",
        f"- symptom: `{row.get('symptom', '')}`"
        + (f" (failure class {row['symptomClass']})" if row.get("symptomClass") else ""),
        f"- description: {row['description']}",
        f"- run: {row['ended']} in {row['durationS']:.0f} s, report {row['reportDir']}",
        f"- command: `{row['command']}`",
        "",
        "| Test | Cell | Message |",
        "|---|---|---|",
    ]
    accidents = row.get("accidents", {})
    for test, cell in sorted(row["cells"].items()):
        why = f" ({_cell(accidents[test])})" if test in accidents else ""
        lines.append(f"| `{test}` | {cell}{why} | {_cell(row['messages'].get(test, ''))} |")
    return "\n".join(lines) + "\n"


def allure_results(matrix_dir: pathlib.Path, data: dict) -> pathlib.Path:
    """Write ``matrix_dir/allure-results``: one result per fault and per healthy run; returns the folder."""
    folder = matrix_dir / "allure-results"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*"):
        old.unlink()
    status_of = {
        "caught": "passed",
        "partial": "failed",
        verdict.ACCIDENT: "failed",
        "missed": "failed",
        "error": "broken",
    }
    for row in data["faults"]:
        reasons = [r for r in data["verdictReasons"] if r.startswith(f"fault {row['name']}:")]
        _allure_result(
            folder,
            f"fault {row['name']} is detected",
            status_of[row["status"]],
            "\n".join(reasons),
            {
                "parentSuite": "validate-suite",
                "suite": "faults",
                "epic": "fault matrix",
                "feature": row["class"],
                "tag": row["status"],
            },
            _fault_body(row),
            row["durationS"],
            {"fault": row["name"]},
        )
    for row in data["healthy"]:
        bad = row["exitCode"] != 0 or bool(row["failures"])
        body = f"# healthy run {row['label']}: {row['ended']}\n\n- command: `{row['command']}`\n\n" + "\n".join(
            f"- `{t}`: {_cell(m)}" for t, m in row["failures"].items()
        )
        _allure_result(
            folder,
            f"healthy driver passes ({row['label']})",
            "failed" if bad else "passed",
            "\n".join(r for r in data["verdictReasons"] if r.startswith("healthy driver")),
            {"parentSuite": "validate-suite", "suite": "healthy", "epic": "fault matrix"},
            body + "\n",
            row["durationS"],
            {"run": row["label"]},
        )
    return folder


def write(matrix_dir: pathlib.Path, data: dict, *, html_report: bool = True, link_latest: bool = True) -> list[str]:
    """Write summary.json, summary.md, the Allure results and (``html_report``) allure-report/, then point
    ``<parent>/latest`` at ``matrix_dir`` when ``link_latest`` (never when the parent is reports/ itself:
    reports/latest is the last plain run's). Returns problems that did not stop the report (Allure CLI errors)."""
    matrix_dir.mkdir(parents=True, exist_ok=True)
    (matrix_dir / "summary.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (matrix_dir / "summary.md").write_text(render(data), encoding="utf-8")
    folder = allure_results(matrix_dir, data)
    first = next((r["reportDir"] for r in data["healthy"] + data["faults"] if r["reportDir"]), "")
    run = runinfo.load(first) if first else {}
    html.write_side_files(folder, run, {"run.id": data["reportId"], "matrix.kind": "fault-matrix"})
    problems = []
    if html_report:
        try:
            html.generate(
                matrix_dir,
                folder,
                history.prepare(matrix_dir),
                f"DRA suite validation: fault-detection matrix ({data['detection']['caught']}/"
                f"{data['detection']['faults']} faults caught)",
                [runinfo.k8s_minor(run)],
                ["summary.md", "summary.json"],
            )
        except html.ReportError as exc:
            problems.append(str(exc))
    if link_latest and matrix_dir.resolve().parent != REPORTS_ROOT:  # reports/latest is the last plain run's
        history.update_latest(matrix_dir)
    return problems
