"""Results of checks that are not pytest items (the after-module invariant checks, ``<module>::invariants``):
one Allure result with the same labels, parameters and history identity a test of that module gets, and its
evidence pieces attached and copied under ``<report_dir>/evidence/<test-id>/`` like a failing test's.

Written with allure-python's own result model and file writer (``allure_commons.model2``,
``AllureFileLogger``), so :mod:`conformance.reporting.results` reads them back like any other result.
"""

from __future__ import annotations

import pathlib
import time
import uuid

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Attachment, Label, Link, Parameter, StatusDetails, TestResult
from allure_commons.utils import md5

from conformance.reporting import classify, evidence, labels, runinfo


def write_result(
    report_dir: pathlib.Path,
    allure_dir: pathlib.Path,
    *,
    nodeid: str,
    name: str,
    marks,
    status: str,
    message: str,
    pieces: list[tuple[str, bytes, str]] = (),
    start_s: float | None = None,
) -> None:
    """Write the Allure result of ``nodeid`` (``status``: passed | failed | broken; ``message``: the failure or,
    when passed, the description) into ``allure_dir``; ``marks``: objects with ``.name``/``.args`` (the module's
    markers) for labels; ``pieces``: ``(name, bytes, mime)`` evidence."""
    report_dir, allure_dir = pathlib.Path(report_dir), pathlib.Path(allure_dir)
    allure_dir.mkdir(parents=True, exist_ok=True)
    found = labels.for_test(list(marks), runinfo.load(report_dir) if (report_dir / "run.json").is_file() else {})
    failed = status != "passed"
    now_ms = int(time.time() * 1000)
    result = TestResult(
        uuid=str(uuid.uuid4()),
        name=name,
        fullName=nodeid,
        start=int((start_s or time.time()) * 1000),
        stop=now_ms,
        status=status,
        statusDetails=StatusDetails(message=message) if failed else None,
        description=None if failed else message,
    )
    result.labels = [Label(name=n, value=v) for n, v in found.labels + (("nodeid", nodeid),)]
    if failed:
        kind = classify.DRIVER_DEFECT if status == "failed" else classify.INFRASTRUCTURE
        result.labels.append(Label(name="failure_class", value=kind))
    result.links = [Link(type="link", url=url, name=text) for url, text in found.links]
    result.parameters = [Parameter(name=n, value=v) for n, v in found.parameters]
    result.historyId = md5(nodeid, *(f"{n}={v}" for n, v in found.parameters))
    writer = AllureFileLogger(str(allure_dir), clean=False)
    for index, (piece_name, data, mime) in enumerate(pieces):
        copy = evidence.write_copy(report_dir, nodeid, "call", index, piece_name, data, mime)
        source = f"{uuid.uuid4()}-attachment.{copy.suffix.lstrip('.') or 'txt'}"
        writer.report_attached_data(body=data, file_name=source)
        result.attachments.append(Attachment(name=piece_name, source=source, type=mime))
    writer.report_result(result)
