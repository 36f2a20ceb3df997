"""What narrowed a run (conformance/runner/narrowing.py): the pytest arguments that select a subset of the
profile's tests or stop the run early, the profile's tests collected and selected (counted by the plugin after
the ``--profile`` deselection and before ``-k``), and run.json's ``narrowing``."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conformance.runner import facts, narrowing

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"


@pytest.mark.parametrize(
    "options, args, select, stop",
    [
        ({}, [str(SUITES)], [], []),
        ({"keyword": "smoke", "maxfail": 1}, [str(SUITES)], ["-k", "smoke"], ["-x"]),
        ({"markexpr": "not slow", "maxfail": 3}, [str(SUITES)], ["-m", "not slow"], ["--maxfail", "3"]),
        ({"deselect": ["suites/a.py::t"], "lf": True}, [str(SUITES)], ["--deselect", "suites/a.py::t", "--lf"], []),
        ({"ignore": ["suites/node"], "stepwise": True}, [str(SUITES)], ["--ignore", "suites/node", "--sw"], []),
        ({}, [str(SUITES / "node")], ["suites/node"], []),
        ({}, [f"{SUITES}/smoke/test_smoke.py::test_x"], ["suites/smoke/test_smoke.py::test_x"], []),
        ({}, [str(SUITES), str(SUITES / "node")], [], []),  # all of suites/ is among the paths
        # review 6 finding 2: ini overrides that change what is collected, or another ini file
        (
            {"override_ini": ["python_functions=test_smoke*", "console_output_style=classic"]},
            [str(SUITES)],
            ["-o", "python_functions=test_smoke*"],
            [],
        ),
        ({"inifilename": "other.ini"}, [str(SUITES)], ["-c", "other.ini"], []),
    ],
)
def test_arguments_name_what_selects_and_what_stops(options, args, select, stop):
    assert narrowing.arguments(options, args) == {"select": select, "stop": stop}


def _collect(tmp_path: Path, *extra: str, paths: tuple[str, ...] = (str(SUITES),)) -> dict:
    report = tmp_path / "report"
    cmd = [sys.executable, "-m", "pytest", *paths, "--collect-only", "-q", "-p", "no:cacheprovider"]
    cmd += ["--driver", "reference", "--profile", "core", "--report-dir", str(report), *extra]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return narrowing.load(report)


def test_the_plugin_counts_the_profiles_tests_before_k_deselects(tmp_path):
    whole = _collect(tmp_path / "whole")
    smoke = _collect(tmp_path / "smoke", "-k", "smoke")
    assert whole["collected"] == whole["selected"] == smoke["collected"] > smoke["selected"] > 0, (whole, smoke)


class _Config:
    def __init__(self, worker: bool = False, **options) -> None:
        self.option = types.SimpleNamespace(
            **{"collectonly": False, "keyword": "", "markexpr": "", "maxfail": 0, **options}
        )
        self.args = [str(SUITES)]
        if worker:
            self.workerinput = {}


DESELECTING_PLUGIN = """
def pytest_collection_modifyitems(config, items):
    gone = [i for i in items if "smoke" in i.nodeid]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [i for i in items if i not in gone]
"""


def test_a_plugins_deselection_is_recorded_as_dropped_not_as_the_users_narrowing(tmp_path, monkeypatch):
    """Breaker s12 F4: a ``-p`` plugin (registered before the recorder, so its hook runs after the count) that
    deselects through pytest_deselected, as pytest-testmon or pytest-picked do: its tests are ``dropped``; with
    ``-k`` beside it, only the plugin's are; ``-k`` alone drops nothing."""
    (tmp_path / "dropper.py").write_text(DESELECTING_PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    plugin = _collect(tmp_path / "plugin", "-p", "dropper")
    assert plugin["dropped"] == plugin["collected"] - plugin["selected"] > 0, plugin
    assert all("smoke" in t for t in plugin["droppedTests"]), plugin
    both = _collect(tmp_path / "both", "-p", "dropper", "-k", "not claim_is_allocated")
    assert both["dropped"] == plugin["dropped"] < both["collected"] - both["selected"], (plugin, both)
    alone = _collect(tmp_path / "alone", "-k", "smoke")
    assert "dropped" not in alone and alone["selected"] < alone["collected"], alone


def test_the_controller_adds_the_arguments_and_whether_the_run_stopped_early(tmp_path):
    recorder = narrowing.Recorder(_Config(keyword="smoke", maxfail=1), tmp_path)
    recorder.pytest_collection_finish(types.SimpleNamespace(items=[]))  # never collected (an xdist controller)
    assert narrowing.load(tmp_path) == {}
    recorder.pytest_collection_modifyitems(items=[1, 2, 3])
    recorder.pytest_collection_finish(types.SimpleNamespace(items=[1]))
    recorder.pytest_sessionfinish(types.SimpleNamespace(shouldfail="stopping after 1 failures", shouldstop=False))
    assert narrowing.load(tmp_path) == {
        "collected": 3,
        "selected": 1,
        "dropped": 2,  # gone without a pytest_deselected call from -k / -m / --deselect (pytest's own modules)
        "droppedTests": ["2", "3"],
        "byUser": [],
        "selectedTests": ["1"],
        "narrowsCollection": False,
        "select": ["-k", "smoke"],
        "stop": ["-x"],
        "stoppedEarly": True,
        "ini": "",  # the fake config read no ini file (run reads conformance/pytest-run.ini)
    }
    worker = tmp_path / "worker"
    narrowing.Recorder(_Config(worker=True, keyword="x"), worker).pytest_sessionfinish(types.SimpleNamespace())
    assert narrowing.load(worker) == {}  # a worker only counts


def test_run_json_carries_the_narrowing_record():
    from conformance.core.capabilities import Capabilities

    doc = facts.run_info(
        run_id="r",
        started=0,
        cluster_kind="local",
        facts={},
        driver={},
        profile="core",
        feature_gates_mode="all",
        capabilities=Capabilities.from_dict({}),
        narrowing={"select": ["-k", "x"], "collected": 10, "selected": 2},
    )
    assert json.loads(json.dumps(doc))["narrowing"]["selected"] == 2


EARLY_PLUGIN = """
import pytest
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    items[:] = [i for i in items if "smoke" not in i.nodeid]   # silently, before the recorder counts
"""
SNEAKY_PLUGIN = """
def pytest_configure(config):
    config.option.keyword = "not smoke"   # -k's own code path deselects, as if the user had typed it

def pytest_collection_finish(session):
    session.config.option.keyword = ""    # gone before the arguments are recorded
"""


def _verdict_reasons(rec: dict) -> tuple[list[str], dict | None]:
    """The FAIL reasons and ``narrowed`` of a run whose results are exactly ``rec``'s selected tests."""
    from conformance.reporting import manifest, narrowed

    missing = manifest.missing("core", rec["selectedTests"])
    run = {"narrowing": {**rec, **narrowing.arguments({}, [str(SUITES)])}}
    return narrowed.dropped_reasons(run, missing), narrowed.from_run(run, missing)


@pytest.mark.parametrize("plugin, extra", [(EARLY_PLUGIN, ["-k", "not claim_is_allocated"]), (SNEAKY_PLUGIN, [])])
def test_a_plugin_that_drops_tests_before_the_count_or_through_k_makes_the_run_fail(
    tmp_path, monkeypatch, plugin, extra
):
    """Breaker s13 B1 (a tryfirst plugin removes tests before the recorder counts them, beside the user's -k) and
    B2 (a plugin sets ``config.option.keyword`` itself, then clears it): the smoke tests were neither selected nor
    deselected by what the user typed, so the verdict is FAIL naming them, not NARROWED-PASS."""
    (tmp_path / "plug.py").write_text(plugin)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    rec = _collect(tmp_path / "run", "-p", "plug", *extra)
    assert not any("smoke" in t for t in rec["selectedTests"] + rec["byUser"]), rec
    reasons, _ = _verdict_reasons(rec)
    assert reasons and "deselected by no argument of the run" in reasons[0] and "smoke" in reasons[0], reasons


def test_the_users_typed_k_also_through_pytest_addopts_is_narrowing_not_dropping(tmp_path, monkeypatch):
    """-k typed on the command line or in PYTEST_ADDOPTS deselects as the user's: NARROWED-PASS, no reason."""
    typed = _collect(tmp_path / "typed", "-k", "smoke")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k smoke")
    env = _collect(tmp_path / "env")
    for rec in (typed, env):
        assert "dropped" not in rec and rec["byUser"] and rec["selected"] < rec["collected"], rec
        reasons, shown = _verdict_reasons(rec)
        assert reasons == [] and shown, (reasons, rec)


def test_code_that_only_claims_a_pytest_module_name_is_not_the_user():
    """Breaker s13 B2: ``caller_module`` trusts a ``__name__`` only when that module's file runs the frame."""
    spoof = {"__name__": "_pytest.mark", "narrowing": narrowing}
    exec(compile("def call():\n    return narrowing.caller_module(1)\n", "/tmp/not_pytest.py", "exec"), spoof)
    assert spoof["call"]() == ""
    assert narrowing.caller_module(1) == __name__


@pytest.mark.parametrize(
    "paths, extra, lost",
    [
        (("suites/smoke", "suites/node/test_kep5970.py"), [], True),  # the dropped smoke tests are in the paths
        (("suites",), ["--ignore", "suites/api_v1"], True),  # beside the user's --ignore
        (("suites/node",), [], False),  # the user's path left the smoke tests out: narrowing, not dropping
    ],
)
def test_a_plugin_drop_is_named_inside_the_users_own_paths_and_ignores(tmp_path, monkeypatch, paths, extra, lost):
    """Breaker s13 B1's remaining gap: a tryfirst plugin removes the smoke tests before the recorder counts them
    while the user's own paths or ``--ignore`` narrow the collection. The record's ``scope`` (what the typed
    paths collect) tells the two apart: FAIL naming the smoke tests when the user's paths collect them, no reason
    (NARROWED-PASS) when the user's path left them out."""
    (tmp_path / "plug.py").write_text(EARLY_PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    rec = _collect(tmp_path / "run", "-p", "plug", *extra, paths=paths)
    run = {"narrowing": {**rec, **narrowing.arguments({"ignore": extra[1:]}, paths), "narrowsCollection": True}}
    from conformance.reporting import manifest, narrowed

    missing = manifest.missing("core", rec["selectedTests"])
    reasons = narrowed.dropped_reasons(run, missing)
    assert narrowed.from_run(run, missing), run  # narrowed either way (the user's paths)
    if lost:
        assert reasons and "deselected by no argument of the run" in reasons[0] and "smoke" in reasons[0], reasons
    else:
        assert reasons == [] and rec["scope"]["paths"] == ["node"], (reasons, rec)


@pytest.mark.parametrize(
    "key, scope, inside",
    [
        ("node/test_a.py::t", None, True),
        ("node/test_a.py::t", {"paths": ["node"]}, True),
        ("smoke/test_s.py::t", {"paths": ["node", "api_v1/test_x.py"]}, False),
        ("api_v1/test_x.py::t[a]", {"paths": ["api_v1/test_x.py::t"]}, True),
        ("api_v1/test_x.py::tt", {"paths": ["api_v1/test_x.py::t"]}, False),
        ("node/test_a.py::t", {"paths": None, "ignore": ["node/test_a.py"]}, False),
        ("node/test_a.py::t", {"paths": None, "ignore": ["nod"]}, True),
        ("node/test_a.py::t", {"paths": None, "ignore": [""]}, False),  # suites/ itself ignored
        ("node/test_a.py::t", {"suites": "/r/suites", "paths": None, "ignoreGlob": ["/r/suites/no*"]}, False),
        ("node/test_a.py::t", {"suites": "/r/suites", "paths": None, "ignoreGlob": ["/r/suites/smoke*"]}, True),
    ],
)
def test_the_scope_follows_pytests_path_and_ignore_rules(key, scope, inside):
    from conformance.reporting import narrowed

    assert narrowed.in_scope(key, scope) is inside
