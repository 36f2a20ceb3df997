"""Verdict honesty (issue 24 §1, breaker findings 1, 8 and 12): a declined node access excuses no core skip and
an excused one is named on the verdict line; a plain pytest session judges the ``--alluredir`` it was given and
fails closed without results; the shipped manifest of each profile's tests is current, and a run whose results
lack some of them is narrowed, whatever dropped them."""

from __future__ import annotations

import json
import types

from conformance.reporting import core_skips, manifest, narrowed, scope, summary
from conformance.reporting.results import TestRecord as Record
from conformance.runner.session import Session
from tests.reporting.conftest import run_sample, sample_run_json

NO_ACCESS = "no node access for this cluster kind (use --cluster local, or --node-access privileged-pod ...)"


def _kep5970_6() -> Record:
    labels = {"profile": ["core"], "feature": ["driver.cdi", "node_access"], "story": ["KEP5970-6", "ALLOC-13"]}
    reason = f"node_access not available: {NO_ACCESS}"
    return Record("unprepare", "suites.node.unprepare", "u", "skipped", reason, "", labels, {}, [], 0, 0)


def test_declined_node_access_excuses_no_core_skip_and_an_excused_one_is_named():
    """Finding 1: ``--node-access none`` on a cluster that offers node access (run.json ``node_access.declined``)
    leaves KEP5970-6's skip unexcused (the failure says to drop the flag); a cluster that cannot give node
    access excuses it, and the PASS names it: ``core not run: KEP5970-6 — no node access``."""
    caps = [{"name": "node_access", "available": False, "evidence": NO_ACCESS, "clusterLacks": False}]
    records = [_kep5970_6()]
    assert core_skips.unexcused(records, caps) == []
    assert core_skips.excused(records, caps) == ["KEP5970-6 — no node access"]
    (failure,) = core_skips.unexcused(records, caps, declined=True)
    assert "core test skipped" in failure and "--node-access none turned off" in failure, failure
    assert core_skips.excused(records, caps, declined=True) == []
    waived = [{"name": "driver.cdi", "available": False, "evidence": "the profile declares cdi: false"}]
    assert core_skips.excused(records, waived) == ["KEP5970-6 — waived: cdi"]
    data = {"verdict": "PASS", "profile": "standard", "narrowed": None, "missionAreas": []}
    line = scope.verdict_line({**data, "coreNotRun": ["KEP5970-6 — no node access"]})
    assert line == "PASS (core not run: KEP5970-6 — no node access)", line


def test_run_json_records_whether_node_access_was_declined():
    """Finding 1: the session records the ``--node-access`` choice and whether the cluster offered node access
    (its provider gives a handle for ``auto``: local, kind), so a declined one is told from a missing one."""

    class Provider:
        def __init__(self, offers):
            self.offers = offers

        def node_access(self, choice, owner=True):
            return object() if self.offers and choice != "none" else None

    def choice(value, offers):
        fake = types.SimpleNamespace(cfg=types.SimpleNamespace(node_access=value), cluster_provider=Provider(offers))
        fake.node_access = fake.cluster_provider.node_access(value)
        return Session._node_access_choice(fake)

    assert choice("none", True) == {"choice": "none", "offered": True, "declined": True}
    assert choice("none", False) == {"choice": "none", "offered": False, "declined": False}
    assert choice("auto", True) == {"choice": "auto", "offered": True, "declined": False}


def test_plain_pytest_judges_the_alluredir_it_was_given_and_fails_closed_without_results(tmp_path):
    """Finding 8: ``--alluredir elsewhere`` is judged (a declared capability that did not run still FAILs,
    exit 1); a session without Allure results (``-p no:allure_pytest``) ends ``VERDICT: FAIL (no results to
    judge ...)``, exit 1, never pytest's own 0."""
    elsewhere = tmp_path / "mine"
    proc = run_sample(tmp_path / "held", "-k", "claim_allocated", "--alluredir", str(elsewhere), fail=False)
    out = proc.stdout + proc.stderr
    assert any(elsewhere.glob("*-result.json")) and not (tmp_path / "held" / "allure-results").exists(), out
    assert proc.returncode == 1 and "VERDICT: FAIL (declared capability driver.shared_claims" in out, out
    proc = run_sample(tmp_path / "none", "-p", "no:allure_pytest", fail=False, run_json=sample_run_json())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "VERDICT: FAIL (no results to judge: no Allure results in" in out, out[-3000:]
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "run.json").write_text(json.dumps(sample_run_json()))
    line, fails = scope.at_session_finish(tmp_path / "bare", 0, tmp_path / "nowhere")
    assert fails and line.startswith("VERDICT: FAIL (no results to judge: no Allure results in"), line


def test_the_shipped_profile_manifest_is_current():
    """Finding 12, checked like a lockfile: a fresh collection of the suites per profile equals
    suites/profile-tests.json (regenerate with ``make profile-manifest``)."""
    assert manifest.generate() == manifest.load(), f"{manifest.PATH} is stale: run {manifest.REGENERATE}"
    assert manifest.load()["core"], "the core profile lists no test"


def test_results_missing_tests_of_the_manifest_make_the_run_narrowed(tmp_path):
    """Finding 12: a plugin, conftest or ``collect_ignore`` that drops tests before the narrowing recorder
    counts them (``collected == selected``) still leaves the run narrowed: the results lack manifest IDs. Since
    nothing on the command line narrowed it, the run is FAIL (exit 1), not NARROWED-PASS (issue 24: a CI job
    reading the exit code never takes a run that lost tests for a pass); the same results with the user's own
    ``-k`` are NARROWED-PASS (exit 0, "not a qualification")."""
    core = manifest.load()["core"]
    assert manifest.missing("core", [f"suites/{i}" for i in core]) == []
    assert manifest.missing("core", [f"conformance/suites/{i}" for i in core[1:]]) == [core[0]]
    assert manifest.missing("core", ["tests/reporting/sample_suite/test_sample.py::t"]) == []  # another suite
    cut = narrowed.from_run({"narrowing": {"select": [], "collected": 9, "selected": 9}}, [core[0]])
    assert cut and f"1 of the profile's tests have no result: {core[0]}" in cut["text"], cut
    assert cut["text"].startswith("tests dropped before they were counted; 9 of 9 tests"), cut
    results = tmp_path / "allure-results"
    results.mkdir()
    for i, nodeid in enumerate(core[1:]):  # every core test passed, but one was dropped before it was counted
        labels = [{"name": "nodeid", "value": f"suites/{nodeid}"}, {"name": "profile", "value": "core"}]
        doc = {"name": nodeid, "fullName": nodeid, "status": "passed", "labels": labels, "start": 1, "stop": 2}
        (results / f"{i}-result.json").write_text(json.dumps(doc))
    (tmp_path / "run.json").write_text(json.dumps({"profile": "core", "narrowing": {"collected": 9, "selected": 9}}))
    data = summary.build(tmp_path)
    assert data["verdict"] == "FAIL" and core[0] in data["narrowed"]["text"], data["verdictLine"]
    assert "1 of the profile's tests have no result and no argument of the run deselected them (a plugin, " in (
        data["verdictReasons"][-1]
    ) and data["verdictReasons"][-1].endswith(core[0]), data["verdictReasons"]
    assert not data["qualification"]["qualified"], data["qualification"]
    narrowing = {"select": ["-k", "not x"], "collected": 9, "selected": 8}  # the user's own -k
    (tmp_path / "run.json").write_text(json.dumps({"profile": "core", "narrowing": narrowing}))
    data = summary.build(tmp_path)
    assert data["verdict"] == "NARROWED-PASS" and data["verdictReasons"] == [], data["verdictReasons"]


def test_tests_a_plugin_deselected_make_the_run_fail_even_beside_the_users_k(tmp_path):
    """Breaker s12 F4: a ``-p`` or entry-point plugin's deselection (run.json ``narrowing.dropped``: counted, not
    deselected by -k / -m / --deselect) is not the user's narrowing: FAIL (exit 1) naming the tests, also when
    the user's own ``-k`` narrowed the run beside it; the same counts without ``dropped`` stay NARROWED-PASS."""
    core = manifest.load()["core"]
    results = tmp_path / "allure-results"
    results.mkdir()
    for i, nodeid in enumerate(core[4:]):  # every test that ran passed; the plugin deselected the first four
        labels = [{"name": "nodeid", "value": f"suites/{nodeid}"}, {"name": "profile", "value": "core"}]
        doc = {"name": nodeid, "fullName": nodeid, "status": "passed", "labels": labels, "start": 1, "stop": 2}
        (results / f"{i}-result.json").write_text(json.dumps(doc))
    total = len(core)
    plugin = {"select": [], "collected": total, "selected": total - 4, "dropped": 4, "droppedTests": core[:4]}
    for extra in ({}, {"select": ["-k", "not nothing"]}):
        (tmp_path / "run.json").write_text(json.dumps({"profile": "core", "narrowing": {**plugin, **extra}}))
        data = summary.build(tmp_path)
        assert data["verdict"] == "FAIL", (extra, data["verdictLine"])
        assert (
            data["verdictReasons"][-1].startswith(
                "4 of the profile's tests were deselected by no argument of the run (a -p or entry-point"
            )
            and core[0] in data["verdictReasons"][-1]
        ), data["verdictReasons"]
        assert "4 deselected by no argument of the run" in data["narrowed"]["text"], data["narrowed"]
    assert narrowed.dropped_reasons({"narrowing": {"collected": 9, "selected": 8, "select": ["-k", "x"]}}, []) == []
