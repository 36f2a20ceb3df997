"""A narrowed run is not a qualification of its profile: the summary's ``narrowed`` and ``qualification``
fields, the ``NARROWED-PASS`` verdict and the texts the summary, the matrix and the ``VERDICT:`` line show.

A run is narrowed when run.json's ``narrowing`` (written by conformance/runner/narrowing.py) names pytest
arguments that select a subset of the profile's tests (``-k``, ``-m``, ``--deselect``, paths or node IDs...),
when the run stopped early (``-x`` / ``--maxfail``), when fewer tests were selected than the profile's
collected ones (counting only those the user's selecting options deselected), or when tests of the profile's
shipped manifest have no result (conformance/reporting/manifest.py). A run.json without ``narrowing`` (written
before it was recorded) reads as not narrowed.
A narrowed run that passes every verdict rule is ``NARROWED-PASS`` (exit code 0 for developers' ``-k``
runs: the narrowing is on their own command line and the line says "not a qualification"), never ``PASS``; a
FAIL stays FAIL. A run whose results lack tests of the manifest while nothing on its command line narrowed it (a
plugin, a conftest or ``collect_ignore`` dropped them: the user asked for the whole profile), or whose recorder
saw tests deselected by no selecting option (``narrowing.dropped``: a ``-p`` or entry-point plugin, a conftest;
with or without ``-k`` beside it; breaker s12 F4), or whose manifest tests without a result were neither selected
nor deselected by the user's typed options (a plugin that removed them before the recorder counted, or that set
``-k`` itself, also inside the user's own paths or beside their ``--ignore``: :func:`in_scope`; breaker s13 B1,
B2), is FAIL (:func:`dropped_reasons`, exit code 1): a CI job that reads only the exit code never takes it for a
pass (issue 24 §1, "never a bare PASS over an untested area").
"""

from __future__ import annotations

import fnmatch

from conformance.reporting import manifest

PASS, FAIL, NARROWED_PASS = "PASS", "FAIL", "NARROWED-PASS"
PASSING = (PASS, NARROWED_PASS)  # verdicts with exit code 0


def from_run(run: dict, missing: list[str] | None = None) -> dict | None:
    """summary.json's ``narrowed`` from run.json (:mod:`conformance.reporting.runinfo`): None when the run was
    not narrowed, else ``{"args": [pytest args], "collected": int | None (the profile's tests collected),
    "selected": int | None, "stoppedEarly": bool, "text": "-k foo; 12 of 154 tests"}``. ``missing``: the
    tests of the profile's shipped manifest with no result (conformance/reporting/manifest.py): any makes
    the run narrowed, whatever dropped them (``... ; 2 of the profile's tests have no result: a, b``)."""
    rec = run.get("narrowing") or {}
    args = [str(a) for a in (rec.get("select") or [])]
    stopped = bool(rec.get("stoppedEarly"))
    collected, selected = rec.get("collected"), rec.get("selected")
    counted = isinstance(collected, int) and isinstance(selected, int)
    plugin_dropped = _lost(rec, missing)[0]
    if not _by_the_run(rec) and not missing and not plugin_dropped:
        return None
    args += [str(a) for a in (rec.get("stop") or [])] if stopped else []
    dropped = missing and not _by_the_run(rec)
    parts = [" ".join(args) or ("tests dropped before they were counted" if dropped else "tests deselected")]
    if counted:
        parts.append(f"{selected} of {collected} tests")
    if plugin_dropped:
        parts.append(f"{plugin_dropped} deselected by no argument of the run")
    if stopped:
        parts.append("stopped early")
    if missing:  # named only where nothing else says what narrowed the run (a dropped test)
        shown = "" if args else ": " + ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        parts.append(f"{len(missing)} of the profile's tests have no result{shown}")
    return {
        "args": args,
        "collected": collected if counted else None,
        "selected": selected if counted else None,
        "stoppedEarly": stopped,
        "text": "; ".join(parts),
    }


def _dropped(rec: dict) -> int:
    """How many counted tests run.json's ``narrowing`` record says no selecting option deselected (``dropped``:
    another plugin's deselection, conformance/runner/narrowing.py); 0 when none or not recorded."""
    value = rec.get("dropped")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _lost(rec: dict, missing: list[str] | None) -> tuple[int, list[str]]:
    """``(count, first node IDs)`` of the profile's tests that something other than the user dropped: the
    recorder's ``dropped``, or (a record with ``selectedTests``) the ``missing`` manifest tests neither selected
    nor in ``byUser`` (a plugin removed them before the count, or deselected them through a ``-k`` the user did
    not type; breaker s13 B1, B2) that the user's typed paths and ``--ignore`` collect (``scope``; a record whose
    user arguments narrow the collection without a ``scope`` cannot tell, so none count)."""
    loose: list[str] = []
    scope = rec.get("scope") if isinstance(rec.get("scope"), dict) else None
    if "selectedTests" in rec and (scope or not rec.get("narrowsCollection")):
        accounted = {manifest.key(str(n)) for n in [*rec["selectedTests"], *(rec.get("byUser") or [])]}
        loose = [m for m in missing or [] if manifest.key(m) not in accounted and in_scope(manifest.key(m), scope)]
    if len(loose) >= _dropped(rec):
        return len(loose), loose[:5]
    return _dropped(rec), [str(n) for n in rec.get("droppedTests") or []]


def in_scope(key: str, scope: dict | None) -> bool:
    """Whether the test ``key`` (a node ID relative to suites/, :func:`manifest.key`) is collected by the user's
    typed paths and ``--ignore`` / ``--ignore-glob`` as run.json's ``narrowing.scope`` records them
    (conformance/runner/narrowing.py ``collection_scope``; None: everything is). pytest's rules
    (_pytest.main.pytest_ignore_collect): an ignored path is the test's file or a folder above it; a glob matches
    the absolute path of the file or of a folder above it."""
    if scope is None:
        return True
    parts = key.partition("::")[0].split("/")
    above = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if any(i == "" or i in above for i in scope.get("ignore") or []):
        return False
    root = str(scope.get("suites", "")).rstrip("/")
    absolute = [root, *(f"{root}/{a}" for a in above)]
    if any(fnmatch.fnmatch(a, str(g)) for a in absolute for g in scope.get("ignoreGlob") or []):
        return False
    paths = scope.get("paths")
    if paths is None:
        return True
    return any(
        (p in above) if "::" not in p else key == p or key.startswith((p + "::", p + "[")) for p in map(str, paths)
    )


def _by_the_run(rec: dict) -> bool:
    """Whether run.json's ``narrowing`` record says the run itself narrowed its selection: pytest arguments that
    select a subset, an early stop, or fewer tests selected than collected beyond those ``dropped``."""
    collected, selected = rec.get("collected"), rec.get("selected")
    counted = isinstance(collected, int) and isinstance(selected, int)
    return bool(rec.get("select") or rec.get("stoppedEarly") or (counted and selected + _dropped(rec) < collected))


def dropped_reasons(run: dict, missing: list[str] | None) -> list[str]:
    """The verdict reason (a list of one, or empty) of a run whose results lack the profile manifest's tests
    ``missing`` while nothing on its command line narrowed it (run.json ``narrowing``: no selecting argument, no
    early stop, every collected test selected): something else dropped them (a ``-p`` plugin, a conftest,
    ``collect_ignore``), so the run is FAIL, exit code 1, not NARROWED-PASS. ``[]`` when nothing is missing or the
    user's own arguments narrowed the run (then NARROWED-PASS, exit 0). Tests the recorder saw deselected by no
    selecting option (``narrowing.dropped``) give the reason whatever else narrowed the run."""
    rec = run.get("narrowing") or {}
    count, names = _lost(rec, missing)
    if count:
        shown = ", ".join(names) + (", ..." if len(names) < count else "")
        untyped = [f"-{'-deselect' if d == 'deselect' else d[0]}" for d in rec.get("untyped") or []]
        set_by = f"; {' '.join(untyped)} set by no argument the user typed" if untyped else ""
        return [
            f"{count} of the profile's tests were deselected by no argument of the run (a -p or entry-point "
            f"plugin or a conftest deselected or removed them{set_by}; run without it): {shown}"
        ]
    if not missing or _by_the_run(rec):
        return []
    shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
    return [
        f"{len(missing)} of the profile's tests have no result and no argument of the run deselected them "
        f"(a plugin, conftest or collect_ignore dropped them): {shown}"
    ]


def verdict(reasons: list[str], narrowed: list | dict | None) -> str:
    """``FAIL`` when there are ``reasons``, else ``NARROWED-PASS`` when ``narrowed`` (a summary's field, or a
    list of them, e.g. a matrix's cells) names any narrowing, else ``PASS``."""
    if reasons:
        return FAIL
    any_narrowed = any(narrowed) if isinstance(narrowed, list) else bool(narrowed)
    return NARROWED_PASS if any_narrowed else PASS


def qualification(verdict_text: str, profile: str, narrowed: dict | None) -> dict:
    """summary.json's ``qualification``: ``{"profile", "qualified": bool, "text"}``; qualified only for a PASS
    of a run that was not narrowed."""
    if narrowed:
        text = f"not a qualification of profile {profile}: narrowed run ({narrowed['text']})"
    elif verdict_text == PASS:
        text = f"qualification of profile {profile}: passed"
    else:
        text = f"qualification of profile {profile}: failed"
    return {"profile": profile, "qualified": verdict_text == PASS and not narrowed, "text": text}


def line(verdict_text: str, profile: str, narrowed: dict | None) -> str:
    """The verdict as one line for a headline or the ``VERDICT:`` line: ``PASS`` / ``FAIL`` unchanged for a run
    that was not narrowed; ``PASS (narrowed: -k foo; 12 of 154 tests) — not a qualification of profile
    standard`` (``FAIL (narrowed: ...)``) for a narrowed one."""
    if not narrowed:
        return verdict_text
    shown = PASS if verdict_text == NARROWED_PASS else verdict_text
    return f"{shown} (narrowed: {narrowed['text']}) — not a qualification of profile {profile}"


def matrix_line(matrix: dict) -> str:
    """A matrix's verdict as one line (matrix.json of conformance/reporting/matrix.py): ``PASS`` / ``FAIL``, or
    with the narrowed cells named: ``PASS (narrowed cells: Kubernetes 1.34: -k foo; 2 of 10 tests) — not a
    qualification``."""
    cut = [f"Kubernetes {c['version']}: {c['narrowed']['text']}" for c in matrix["cells"] if c.get("narrowed")]
    if not cut:
        return matrix["verdict"]
    shown = PASS if matrix["verdict"] == NARROWED_PASS else matrix["verdict"]
    return f"{shown} (narrowed cells: {'; '.join(cut)}) — not a qualification"
