"""Per-test records of a run stopped by Ctrl-C or SIGTERM (breaker s15 C10).

When a run is interrupted, allure-pytest still writes a result for the test the signal cut short, with status
``passed`` and none of the labels the harness adds at setup (conformance/reporting/plugin.py: at least
``nodeid``), and results ``skipped`` with no reason and no labels for the tests that never started. Neither is a
result: the summary of an interrupted run (run.json ``interrupted``) records the first as ``unknown`` with
:data:`CUT_SHORT` and the others as skipped with :data:`NOT_RUN`. A result with the harness's labels finished its
phases and keeps its status.
"""

from __future__ import annotations

CUT_SHORT = "interrupted (Ctrl-C or SIGTERM) before the test finished: no result"
NOT_RUN = "not run: run interrupted"
HARNESS_LABEL = "nodeid"  # added by the harness's pytest_runtest_setup to every test it labels


def settle(tests: list[dict], records: list, interrupted: bool) -> list[dict]:
    """``tests`` (summary test entries, in the order of ``records``, the :class:`results.TestRecord` they came
    from) with the incomplete results of an interrupted run rewritten in place: ``passed`` without the harness's
    labels -> ``unknown`` with reason :data:`CUT_SHORT`; ``skipped`` without a reason -> reason :data:`NOT_RUN`.
    Unchanged when ``interrupted`` is false."""
    if not interrupted:
        return tests
    for test, rec in zip(tests, records, strict=True):
        labelled = bool(rec.labels.get(HARNESS_LABEL))
        if test["status"] == "passed" and not labelled:
            test.update(status="unknown", reason=CUT_SHORT)
        elif test["status"] == "skipped" and not (test.get("reason") or "").strip():
            test["reason"] = NOT_RUN
    return tests


def settle_files(results_dir, interrupted: bool) -> int:
    """The same rewrite on the Allure result files of ``results_dir`` (a ``pathlib.Path``), so that the Allure
    report does not show a cut-short test green: status ``unknown`` with :data:`CUT_SHORT` as its message, or
    :data:`NOT_RUN` as the message of a reasonless skip. Returns the number of files rewritten (0 when not
    ``interrupted``); unreadable files are left alone."""
    import json  # noqa: PLC0415 - only an interrupted run's report build needs it

    if not interrupted:
        return 0
    changed = 0
    for path in sorted(results_dir.glob("*-result.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        labelled = any(label.get("name") == HARNESS_LABEL for label in data.get("labels") or [])
        details = data.get("statusDetails") or {}
        if data.get("status") == "passed" and not labelled:
            data.update(status="unknown", statusDetails={**details, "message": CUT_SHORT})
        elif data.get("status") == "skipped" and not (details.get("message") or "").strip():
            data["statusDetails"] = {**details, "message": NOT_RUN}
        else:
            continue
        path.write_text(json.dumps(data))
        changed += 1
    return changed
