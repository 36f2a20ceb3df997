"""After-module invariant checks (issue 11): the driver-agnostic rules of :mod:`conformance.dra.checks` run over what
every suite module produced, and their verdict appears as one result per module, ``<module>::invariants``.

When (pytest glue, registered by :mod:`conformance.plugin` through ``pytest_plugins``):

* end of each test, before its fixtures are torn down (``pytest_runtest_teardown``, tryfirst; each test's
  namespaces are deleted by its tracker's teardown): one LIST of ResourceClaims per namespace the test's tracker
  knows (claims made from templates included) and, when one of them is allocated, one LIST of DeviceClasses:
  a *snapshot* of claims allocated at the same moment;
* end of the module on this process (the next item is in another file, or none): one LIST of the driver's
  ResourceSlices; :func:`conformance.dra.checks.slices.check_slices` and, per snapshot,
  :func:`conformance.dra.checks.allocations.check_allocations`; the outcome is written to
  ``<report_dir>/invariants/<module>--<process>-<n>.json`` (xdist workers share the report dir);
* end of the run loop, in the xdist controller or the only process (``pytest_runtestloop`` wrapper): the
  outcome files merged per module (across workers). A module with a violation FAILS as
  ``<module>::invariants``: a pytest report (terminal, JUnit, exit status, the ``dra-conformance run`` counts)
  and an Allure result with the module's labels, failure class driver-defect, every violation in the message and
  the snapshots as evidence (:mod:`conformance.reporting.synthetic`; summary.json and its verdict read it). A
  check that could not run (API error, a crashing rule) is a *broken* ``<module>::invariants``, never a pass.
  A clean module adds no result (the run's counts stay those of its tests); what every module's check judged
  (tests executed, snapshots, allocated claims, slices) is in ``<report_dir>/invariants.json`` and one terminal
  line: the proof that the checks ran.

Why a result of its own rather than failing the module's last test: that test may be skipped or have failed
already (Allure keeps the first status), and under xdist a module's tests spread over workers, so no single
test is "last"; a synthetic pytest item would be scheduled on any worker, before the module's tests finished.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest
from _pytest.reports import TestReport

from conformance.core.objects import Obj
from conformance.dra.checks import base
from conformance.dra.checks.allocations import check_allocations
from conformance.dra.checks.slices import check_slices
from conformance.dra.inventory import driver_slices
from conformance.plugin import HARNESS, SUITES, TRACKER
from conformance.reporting import synthetic
from conformance.reporting.evidence import test_id

FOLDER = "invariants"
NODE_SUFFIX = "::invariants"
SNAPSHOTS = pytest.StashKey[dict]()  # module path -> {"snapshots": [...], "start": float}


def _module(item) -> str:
    return item.nodeid.split("::", 1)[0]


def _harness(config):
    harness = config.stash.get(HARNESS, None)
    return harness if harness is not None and harness.session is not None else None


def _process() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Snapshot the test's claims before its tracker deletes them; at the module's end, judge the module."""
    harness = _harness(item.config)
    if harness is None or SUITES not in item.path.parents:
        return
    module = _state(item.config, _module(item))
    tracker = item.stash.get(TRACKER, None)
    if tracker is not None:
        module["snapshots"].append(snapshot(harness.session.k8s, tracker.namespaces(), item.nodeid))
    if nextitem is None or _module(nextitem) != _module(item):
        judge(harness, _module(item), item.config.stash[SNAPSHOTS].pop(_module(item)), _marks(item))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """A test that gives its devices back mid-test (``Tracker.release_devices``) deletes its claims before its
    teardown: snapshot them right before, so the module is judged on them all the same."""
    harness = _harness(item.config)
    tracker = item.stash.get(TRACKER, None)
    if harness is None or tracker is None or SUITES not in item.path.parents:
        return
    module = _state(item.config, _module(item))

    def before_release() -> None:
        module["snapshots"].append(snapshot(harness.session.k8s, tracker.namespaces(), item.nodeid))

    tracker.before_release.append(before_release)


def _state(config, module: str) -> dict:
    """This process's record of ``module`` so far: snapshots, start time, tests executed (not skipped)."""
    modules = config.stash.setdefault(SNAPSHOTS, {})
    return modules.setdefault(module, {"snapshots": [], "start": time.time(), "tests": 0})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Count the tests of a module that executed (not skipped), for invariants.json."""
    report = yield
    if call.when == "call" and not report.skipped and _harness(item.config) is not None:
        _state(item.config, _module(item))["tests"] += 1
    return report


def snapshot(k8s, namespaces: list[str], nodeid: str) -> dict:
    """``{"test", "claims": [raw claims], "classes": {name: raw DeviceClass}, "error"}``: the claims of
    ``namespaces`` read now (one LIST each), and the DeviceClasses when a claim is allocated."""
    out = {"test": nodeid, "claims": [], "classes": {}, "error": ""}
    try:
        for namespace in namespaces:
            out["claims"] += [_lean(c.raw) for c in k8s.list("ResourceClaim", namespace)]
        if any(Obj(c).get("status.allocation") for c in out["claims"]):
            out["classes"] = {c.name: _lean(c.raw) for c in k8s.list("DeviceClass")}
    except Exception as exc:  # noqa: BLE001 - a failed look is reported (broken result), never a test's error
        out["error"] = f"could not read the claims of {namespaces}: {type(exc).__name__}: {exc}"
    return out


def _lean(raw: dict) -> dict:
    """``raw`` without ``metadata.managedFields`` (kept as evidence, so smaller)."""
    raw.get("metadata", {}).pop("managedFields", None)
    return raw


def _marks(item) -> list[list]:
    """The module's own markers as ``[name, [args]]`` (area, profile, kep: what labels the result)."""
    marks = getattr(item.module, "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    return [[m.name, [str(a) for a in m.args]] for m in marks]


def judge(harness, module: str, state: dict, marks: list) -> pathlib.Path:
    """Run the slice and allocation checks over ``state``'s snapshots with one LIST of the driver's slices;
    write the outcome file and return its path."""
    session = harness.session
    driver = session.driver.name
    problems = [s["error"] for s in state["snapshots"] if s["error"]]
    violations: list[base.Violation] = []
    slices: list[Obj] | None = None  # None: the LIST failed (no check can run)
    try:
        slices = driver_slices(session.k8s, driver)
    except Exception as exc:  # noqa: BLE001 - reported as a broken result
        problems.append(f"could not list the ResourceSlices of {driver}: {type(exc).__name__}: {exc}")
    judged = 0
    checks = [("check_slices", lambda: check_slices(slices, driver, session.profile.attributes))]
    for snap in state["snapshots"] if slices is not None else []:
        claims = [Obj(c) for c in snap["claims"]]
        classes = {n: Obj(c) for n, c in snap["classes"].items()}
        judged += sum(1 for c in claims if c.get("status.allocation.devices.results"))
        checks.append(
            (f"check_allocations ({snap['test']})", lambda c=claims, k=classes: check_allocations(c, slices, driver, k))
        )
    for name, check in checks if slices is not None else []:
        try:
            violations += [v for v in check() if v not in violations]
        except Exception as exc:  # noqa: BLE001 - a crashing check is a broken result, not a pass
            problems.append(f"{name} raised {type(exc).__name__}: {exc}")
    outcome = {
        "module": module,
        "marks": marks,
        "start": state["start"],
        "tests": state["tests"],
        "snapshots": len(state["snapshots"]),
        "allocated_claims": judged,
        "slices": len(slices or []),
        "driver": driver,
        "violations": [vars(v) for v in violations],
        "problems": problems,
        "evidence": {"slices": [s.raw for s in slices or []]} if violations else {},
    }
    folder = pathlib.Path(harness.report_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{test_id(module)}--{_process()}-{time.monotonic_ns()}.json"
    if violations:
        outcome["evidence"]["snapshots"] = state["snapshots"]
    path.write_text(json.dumps(outcome, indent=1, default=str), encoding="utf-8")
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    """After every test ran (all workers done under xdist): one ``<module>::invariants`` result per module."""
    harness = _harness(session.config)
    owner = harness is not None and not hasattr(session.config, "workerinput")
    try:
        result = yield
    except Exception:  # e.g. --maxfail reached: report what the modules that ran produced
        if owner:
            report_all(session.config, pathlib.Path(harness.report_dir))
        raise
    if owner:
        report_all(session.config, pathlib.Path(harness.report_dir))
    return result


class _Mark:
    def __init__(self, name: str, args: list) -> None:
        self.name, self.args = name, tuple(args)


def merged(folder: pathlib.Path) -> dict[str, dict]:
    """``{module: outcome}`` from every outcome file in ``folder``, merged across processes (counts summed,
    violations, problems and evidence snapshots concatenated without duplicates)."""
    out: dict[str, dict] = {}
    for path in sorted(folder.glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        whole = out.get(part["module"])
        if whole is None:
            out[part["module"]] = part
            continue
        whole["start"] = min(whole["start"], part["start"])
        whole["slices"] = max(whole["slices"], part["slices"])
        for key in ("tests", "snapshots", "allocated_claims"):
            whole[key] += part[key]
        for key in ("violations", "problems"):
            whole[key] += [x for x in part[key] if x not in whole[key]]
        for key, value in part["evidence"].items():
            whole["evidence"].setdefault(key, value if key == "slices" else [])
            if key == "snapshots":
                whole["evidence"][key] += value
    return out


def report_all(config, report_dir: pathlib.Path) -> dict[str, dict]:
    """Emit a failing pytest report and Allure result for every module with a violation (or a check that could
    not run: broken); record every module's outcome (what was judged) in ``<report_dir>/invariants.json`` and
    say it on the terminal. Returns ``{module: outcome}``."""
    folder = report_dir / FOLDER
    if not folder.is_dir():
        return {}
    allure_dir = getattr(config.option, "allure_report_dir", None)
    outcomes = merged(folder)
    for outcome in outcomes.values():
        violations = [base.Violation(**v) for v in outcome["violations"]]
        if violations or outcome["problems"]:
            _fail(config, report_dir, allure_dir, outcome, violations)
    record = {m: {k: v for k, v in o.items() if k != "evidence"} for m, o in outcomes.items()}
    (report_dir / "invariants.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    bad = sorted(m for m, o in outcomes.items() if o["violations"] or o["problems"])
    tr = config.pluginmanager.get_plugin("terminalreporter") if hasattr(config, "pluginmanager") else None
    if tr is not None:
        tr.ensure_newline()
        tr.write_line(
            f"[dra-conformance] invariants: {len(outcomes)} module(s), "
            f"{sum(o['allocated_claims'] for o in outcomes.values())} allocated claim(s) in "
            f"{sum(o['snapshots'] for o in outcomes.values())} snapshot(s); failing: {bad or 'none'} "
            f"({report_dir / 'invariants.json'})"
        )
    return outcomes


def _fail(config, report_dir: pathlib.Path, allure_dir, outcome: dict, violations: list[base.Violation]) -> None:
    """The failing ``<module>::invariants`` result: pytest reports (setup/call/teardown: terminal, JUnit, exit
    status, run counts) and an Allure result with the violations and the snapshots as evidence."""
    module = outcome["module"]
    nodeid, text = module + NODE_SUFFIX, _text(outcome, violations)
    location = (module, None, "invariants")
    config.hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    for when in ("setup", "call", "teardown"):
        bad = when == "call"
        report = TestReport(
            nodeid, location, {"invariants": 1}, "failed" if bad else "passed", text if bad else None, when
        )
        config.hook.pytest_runtest_logreport(report=report)
    config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
    if allure_dir:
        snapshots = json.dumps(outcome["evidence"], indent=1).encode()
        synthetic.write_result(
            report_dir,
            pathlib.Path(allure_dir),
            nodeid=nodeid,
            name=f"invariants[{module}]",
            marks=[_Mark(n, a) for n, a in outcome["marks"]],
            status="failed" if violations else "broken",
            message=text,
            pieces=[("violations.txt", text.encode(), "text/plain"), ("snapshots.json", snapshots, "application/json")],
            start_s=outcome["start"],
        )


def _text(outcome: dict, violations: list[base.Violation]) -> str:
    head = (
        f"invariants[{outcome['module']}]: {len(violations)} violation(s) over {outcome['allocated_claims']} "
        f"allocated claim(s) in {outcome['snapshots']} snapshot(s) of {outcome['tests']} test(s) and "
        f"{outcome['slices']} ResourceSlice(s) of {outcome['driver']}"
    )
    lines = [head] + [f"  {v}" for v in violations] + [f"  could not check: {p}" for p in outcome["problems"]]
    return "\n".join(lines)
