"""junit.xml normalisation: one ``<testcase>`` per test, unique ``(classname, name)``, correct counts.

pytest-rerunfailures writes one testcase per attempt and GitLab keeps only the first of duplicate names, so
a failing test can look passed (reporting.md §3.3/§3.4; facebookresearch/ProgramBench#64). :func:`normalise`
keeps the *last* record of each ``(classname, name)`` and recounts the suite; a last record that did not fail after
an earlier one failed gets a ``<failure>`` naming the attempts (flaky is not a pass, as
:func:`conformance.reporting.results.flaky_outcome`; breaker s15 C1). When pytest wrote no
junit.xml, :func:`from_records` builds one from the Allure results.
"""

from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET

from conformance.reporting import results

OUTCOME_TAGS = ("failure", "error", "skipped")


def _suite_counts(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attr, str(sum(1 for c in cases if c.find(tag) is not None)))
    suite.set("time", f"{sum(float(c.get('time') or 0) for c in cases):.3f}")


def normalise(path: str | pathlib.Path, suite_name: str, suffix: str = "") -> dict:
    """Rewrite the JUnit file at ``path`` in place: one ``<testsuites>`` root with one ``<testsuite
    name=suite_name>``, duplicates removed (last record wins), ``suffix`` appended to every test name
    (e.g. `` [k8s-1.35]`` in a matrix). Returns ``{"tests": n, "duplicates_removed": m}``.

    Raises ``ValueError`` naming the file when it is not JUnit XML.
    """
    path = pathlib.Path(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: not valid JUnit XML ({exc})") from exc
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if root.tag not in ("testsuite", "testsuites"):
        raise ValueError(f"{path}: root element is <{root.tag}>, expected <testsuites> or <testsuite>")
    cases: dict[tuple[str, str], ET.Element] = {}
    tries: dict[tuple[str, str], list[ET.Element]] = {}
    seen = 0
    for suite in suites:
        for case in suite.findall("testcase"):
            seen += 1
            key = (case.get("classname", ""), case.get("name", ""))
            cases.pop(key, None)  # keep the last record, in the position of the last record
            cases[key] = case
            tries.setdefault(key, []).append(case)
    for key, case in cases.items():
        _flaky(case, tries[key])
    out = ET.Element("testsuites")
    suite = ET.SubElement(out, "testsuite", name=suite_name)
    if suites and suites[0].get("timestamp"):
        suite.set("timestamp", suites[0].get("timestamp"))
    for case in cases.values():
        if suffix and not case.get("name", "").endswith(suffix):
            case.set("name", case.get("name", "") + suffix)
        suite.append(case)
    _suite_counts(suite)
    _write(out, path)
    return {"tests": len(cases), "duplicates_removed": seen - len(cases)}


def _flaky(case: ET.Element, attempts: list[ET.Element]) -> None:
    """Add a ``<failure>`` to ``case`` (the last of ``attempts``) when it did not fail and an earlier attempt
    did: ``failed on attempt 1 of 2: <first line>; passed on a retry: flaky is not a pass``."""
    if any(case.find(t) is not None for t in ("failure", "error")):
        return
    bad = [(n, a) for n, a in enumerate(attempts, 1) if a is not case and _fault(a) is not None]
    if not bad:
        return
    fault = _fault(bad[0][1])
    head = ((fault.get("message") or fault.text or fault.tag).splitlines() or [fault.tag])[0][:300]
    outcome = "skipped" if case.find("skipped") is not None else "passed"
    for old in case.findall("skipped"):
        case.remove(old)
    text = (
        f"failed on attempt{'s' if len(bad) > 1 else ''} {', '.join(str(n) for n, _ in bad)} of {len(attempts)}: "
        f"{head}; {outcome} on a retry: flaky is not a pass"
    )
    ET.SubElement(case, "failure", message=text).text = fault.text


def _fault(case: ET.Element) -> ET.Element | None:
    """The ``<failure>`` or ``<error>`` of a testcase, or None."""
    found = case.find("failure")
    return found if found is not None else case.find("error")


def from_records(records: list[results.TestRecord], path: str | pathlib.Path, suite_name: str) -> dict:
    """Write a JUnit file at ``path`` from Allure records (one testcase each). Returns counts as
    :func:`normalise`."""
    out = ET.Element("testsuites")
    suite = ET.SubElement(out, "testsuite", name=suite_name)
    for rec in records:
        module, _, func = rec.full_name.partition("#")
        case = ET.SubElement(suite, "testcase", classname=module, name=func or rec.name, time=f"{rec.duration_s:.3f}")
        if rec.status == "failed":
            ET.SubElement(case, "failure", message=rec.message[:500]).text = rec.trace
        elif rec.status in ("broken", "unknown"):
            ET.SubElement(case, "error", message=rec.message[:500] or rec.status).text = rec.trace
        elif rec.status == "skipped":
            ET.SubElement(case, "skipped", message=rec.message[:500])
    _suite_counts(suite)
    _write(out, path)
    return {"tests": len(records), "duplicates_removed": 0}


def merge(parts: list[tuple[pathlib.Path, str]], path: str | pathlib.Path) -> None:
    """Write one JUnit file at ``path`` holding every ``<testsuite>`` of the normalised files in ``parts``
    (``(file, suite_name)`` pairs; missing files are skipped)."""
    out = ET.Element("testsuites")
    for part, _name in parts:
        if part.is_file():
            for suite in ET.parse(part).getroot().iter("testsuite"):
                out.append(suite)
    _write(out, path)


def cases(path: str | pathlib.Path) -> list[tuple[str, str, str]]:
    """``(classname, name, outcome)`` of every testcase in a JUnit file (outcome: passed|failure|error|
    skipped)."""
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((t for t in OUTCOME_TAGS if case.find(t) is not None), "passed")
        found.append((case.get("classname", ""), case.get("name", ""), outcome))
    return found


def _write(root: ET.Element, path: str | pathlib.Path) -> None:
    ET.indent(root)
    path = pathlib.Path(path)
    tmp = path.with_suffix(".xml.tmp")
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
