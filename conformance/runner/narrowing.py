"""What narrowed a run: the pytest arguments that select a subset of the profile's tests or stop the run early,
and how many of the profile's tests were collected and selected; run.json records it as ``narrowing``, and the
summary shows a narrowed run as not a qualification of its profile (conformance/reporting/narrowed.py).

A small pytest plugin (:func:`register`; no pytest import: plain hook methods) counts the tests: its
``pytest_collection_modifyitems`` is registered before the harness's, so pluggy (last registered, first called)
calls it after the harness deselected by ``--profile`` and before ``-k`` / ``-m`` / ``--deselect`` (pytest's
own plugins, registered first); ``pytest_collection_finish`` gives the selected count. A ``-p`` or entry-point
plugin's ``pytest_collection_modifyitems`` runs after the count too (registered before the recorder), so the
recorder tells deselections apart by origin: those pytest_deselected reports from pytest's own selecting
options (:data:`USER_ORIGINS`: ``-k``, ``-m``, ``--deselect``, ``--lf``, ``--sw``) are the user's narrowing; any
other test counted and not selected (another plugin's deselection, or one dropped silently) is ``dropped``, and
the run is FAIL (conformance/reporting/narrowed.py; breaker s12 F4). What the user's typed paths and
``--ignore`` collect of suites/ is the record's ``scope`` (:func:`collection_scope`), so a test dropped before the
count inside it is told from one the user's path left out (breaker s13 B1). Under xdist the
workers collect and write the counts to ``<report_dir>/.dra-narrowing.json``; the controller (or the only
process) adds the arguments at the end of the session. Source: pytest's options ``-k`` (keyword), ``-m``
(markexpr), ``--deselect``, ``--ignore``, ``--ignore-glob``, ``--lf``, ``--sw``, ``-x`` / ``--maxfail``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance import shipped
from conformance.runner import facts as facts_mod

FILE = ".dra-narrowing.json"
REPO_ROOT = shipped.test_root()
SUITES = shipped.suites_dir()
SELECTING = (  # option dest -> the flag that shows it (the value follows, a list gives one flag per item)
    ("keyword", "-k"),
    ("markexpr", "-m"),
    ("deselect", "--deselect"),
    ("ignore", "--ignore"),
    ("ignore_glob", "--ignore-glob"),
)
SELECTING_FLAGS = (("lf", "--lf"), ("stepwise", "--sw"), ("stepwise_skip", "--sw-skip"))
# modules whose pytest_deselected calls are the user's selecting options: -k / -m (mark), --deselect (main),
# --lf (cacheprovider), --sw / --sw-skip (stepwise); pytest 8-9 module names
USER_ORIGINS = ("_pytest.mark", "_pytest.main", "_pytest.cacheprovider", "_pytest.stepwise")
TYPED = ("keyword", "markexpr", "deselect")  # the deselecting options compared with what the user typed (B2)
DROPPED_SHOWN = 5  # node IDs of dropped tests kept in the record
OWN_INI = shipped.PACKAGE / "pytest-run.ini"  # `run`'s own configuration (conformance/runner/run_guard.py)
# ini keys that change what pytest collects (``-o key=value``); another ini file (``-c``) may change any of them
COLLECTING_INI = ("python_files", "python_classes", "python_functions", "testpaths", "norecursedirs", "addopts")


def _shown(path: str) -> str:
    """``path`` relative to the repository when it lies inside it (reports read the same on every host)."""
    head, sep, tail = path.partition("::")
    try:
        head = str(Path(head).resolve().relative_to(REPO_ROOT))
    except (ValueError, OSError):
        pass
    return head + sep + tail


def path_args(args: Iterable[str], suites: Path = SUITES) -> list[str]:
    """The collection paths and node IDs of ``args`` (pytest's ``config.args``) that narrow the collection of
    ``suites``: none when ``suites`` itself is among them, else all of them (shown relative to the repo)."""
    args = [str(a) for a in args]
    whole = any("::" not in a and Path(a).resolve() == suites.resolve() for a in args)
    return [] if whole or not args else [_shown(a) for a in args]


def arguments(options: Mapping[str, Any], args: Iterable[str], suites: Path = SUITES) -> dict[str, list[str]]:
    """``{"select": [...], "stop": [...]}``: the pytest arguments in ``options`` (pytest's ``config.option``
    as a mapping of dest -> value) and ``args`` (``config.args``) that select a subset of the tests (``-k``,
    ``-m``, ``--deselect``, ``--ignore``, ``--ignore-glob``, ``--lf``, ``--sw``, ``-o`` of a
    :data:`COLLECTING_INI` key, ``-c`` another ini file, paths and node IDs) and
    that stop the run at a failure (``-x`` / ``--maxfail N``), in pytest's own spelling."""
    select: list[str] = []
    for dest, flag in SELECTING:
        value = options.get(dest)
        for item in value if isinstance(value, list | tuple) else [value] if value else []:
            select += [flag, str(item)]
    select += [flag for dest, flag in SELECTING_FLAGS if options.get(dest)]
    for item in options.get("override_ini") or []:
        if str(item).split("=", 1)[0].strip() in COLLECTING_INI:
            select += ["-o", str(item)]
    select += ["-c", str(options["inifilename"])] if not own_ini(options.get("inifilename")) else []
    select += path_args(args, suites)
    maxfail = int(options.get("maxfail") or 0)
    stop = [] if maxfail <= 0 else ["-x"] if maxfail == 1 else ["--maxfail", str(maxfail)]
    return {"select": select, "stop": stop}


def record(report_dir: Path, **fields: Any) -> dict:
    """Merge ``fields`` into ``<report_dir>/.dra-narrowing.json`` (written atomically); returns the record."""
    data = load(report_dir)
    data.update(fields)
    facts_mod.write_json(Path(report_dir) / FILE, data)
    return data


def load(report_dir: Path) -> dict:
    """The narrowing record of ``report_dir`` (``{}`` when none was written). Shape::

    {"select": [args], "stop": [args], "stoppedEarly": bool,
     "collected": int,   # the profile's tests collected (from suites/, or from the given paths)
     "selected": int,    # of those, the tests selected to run
     "dropped": int,     # optional: of those, deselected by no selecting option (another plugin, a conftest)
     "droppedTests": [node IDs],   # the first of them
     "byUser": [node IDs],         # deselected by the user's typed -k / -m / --deselect / --lf / --sw
     "selectedTests": [node IDs],  # selected to run
     "narrowsCollection": bool,    # the user's arguments narrow what is collected (paths, --ignore, -c ...)
     "scope": {...},               # optional: what of suites/ the user's typed paths collect (collection_scope)
     "untyped": [dest],            # optional: -k / -m / --deselect set by something the user did not type
     "ini": str}                   # the pytest configuration file used ("": none; `run`: its own, run_guard.py)
    """
    path = Path(report_dir) / FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def caller_module(depth: int = 1) -> str:
    """The module name of the code that called the hook being run ``depth`` frames up, skipping pluggy's own
    frames (its hook callers) and this module's: e.g. ``_pytest.mark`` for ``-k``'s pytest_deselected call.
    A frame whose ``__name__`` names a module whose file is not the frame's code file (code that only claims
    the name, breaker s13 B2) gives ``""``."""
    frame = sys._getframe(depth)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] != "pluggy" and module != __name__:
            real = getattr(sys.modules.get(module), "__file__", None)
            return module if real and Path(real).resolve() == Path(frame.f_code.co_filename).resolve() else ""
        frame = frame.f_back
    return ""


def own_ini(path: str | None) -> bool:
    """Whether ``path`` (a ``-c`` value; None or ``""``: none given) is no other ini file than ``run``'s own
    (:data:`OWN_INI`), i.e. does not narrow the run."""
    if not path:
        return True
    try:
        return Path(path).resolve() == OWN_INI.resolve()
    except OSError:
        return False


def ini_used(config) -> str:
    """The configuration file pytest read (``config.inipath``: ``run``'s own, or e.g. a repository's
    ``pyproject.toml``), relative to the repository when inside it; ``""`` when none."""
    path = getattr(config, "inipath", None)
    return _shown(str(path)) if path else ""


def _typed(config):
    """pytest's namespace of what the user typed (ini ``addopts``, ``PYTEST_ADDOPTS``, then
    ``config.invocation_params.args``), parsed by pytest's own parser; None when it cannot be parsed."""
    try:
        args = [*config.getini("addopts"), *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
        args += [str(a) for a in config.invocation_params.args]
        return config._parser.parse_known_args(args)
    except Exception:  # noqa: BLE001 - a parser that changed shape: the caller falls back
        return None


def typed_options(config) -> dict[str, Any]:
    """``{"keyword": str, "markexpr": str, "deselect": [node IDs]}``: the ``-k`` / ``-m`` / ``--deselect`` the
    user typed (ini ``addopts``, ``PYTEST_ADDOPTS`` and ``config.invocation_params.args``, in pytest's order,
    parsed by pytest's own parser), not ``config.option``, which any plugin may change (breaker s13 B2). None
    when they cannot be parsed (then ``config.option`` is trusted, as before)."""
    ns = _typed(config)
    if ns is None:
        return None
    return {"keyword": ns.keyword or "", "markexpr": ns.markexpr or "", "deselect": list(ns.deselect or [])}


def _under(path: Path, suites: Path) -> str | None:
    """``path`` relative to ``suites`` (``""`` for ``suites`` itself or a folder above it); None outside it."""
    if path == suites or suites.is_relative_to(path):
        return ""
    return path.relative_to(suites).as_posix() if path.is_relative_to(suites) else None


def collection_scope(config, suites: Path = SUITES) -> dict | None:
    """What of ``suites`` the user's typed collection arguments collect (breaker s13 B1's remaining gap: a plugin
    that drops tests before the count, beside the user's own path or ``--ignore``): ``{"suites": absolute
    path, "paths": [suites-relative paths or node IDs] (None: all of suites/), "ignore": [suites-relative
    paths] ("": all), "ignoreGlob": [absolute globs]}``, as pytest resolves them against the invocation
    folder (``--ignore`` / ``--ignore-glob``: _pytest.main.pytest_ignore_collect; no path typed: ``testpaths``
    from the rootdir, else the invocation folder). None when it cannot be told: options not parsed, another
    ini file (``-c``), ``-o`` of a :data:`COLLECTING_INI` key, ``--pyargs``."""
    ns = _typed(config)
    if ns is None or not own_ini(getattr(ns, "inifilename", None)) or getattr(ns, "pyargs", False):
        return None
    if any(str(o).split("=", 1)[0].strip() in COLLECTING_INI for o in getattr(ns, "override_ini", None) or []):
        return None
    base, suites = Path(config.invocation_params.dir), Path(suites).resolve()
    typed = [str(a) for a in getattr(ns, "file_or_dir", None) or []]
    if not typed:
        root = Path(config.rootpath)
        typed = [str(root / t) for t in config.getini("testpaths") if base == root] or [str(base)]
    paths: list[str] | None = []
    for arg in typed:
        head, sep, tail = arg.partition("::")
        rel = _under((base / head).resolve(), suites)
        if rel == "" and not sep:
            paths = None
            break
        paths += [] if rel is None else [rel + sep + tail]
    ignored = [_under((base / x).resolve(), suites) for x in getattr(ns, "ignore", None) or []]
    globs = [os.path.abspath(base / g) for g in getattr(ns, "ignore_glob", None) or []]
    return {"suites": str(suites), "paths": paths, "ignore": [i for i in ignored if i is not None], "ignoreGlob": globs}


class Recorder:
    """The counting plugin of one process (see the module docstring); ``report_dir``: where the record goes."""

    def __init__(self, config, report_dir: Path) -> None:
        self.config, self.report_dir, self.collected = config, Path(report_dir), None
        self.counted: list = []  # the tests counted as collected
        self.by_user: set[int] = set()  # id() of those the user's selecting options deselected
        self.user_ids: list[str] = []  # their node IDs
        self.typed = typed_options(config)
        self.scope = collection_scope(config) if hasattr(config, "invocation_params") else None

    def _option(self, dest: str) -> Any:
        value = getattr(self.config.option, dest, None)
        return list(value or []) if dest == "deselect" else value or ""

    def untyped(self) -> list[str]:
        """The ``-k`` / ``-m`` / ``--deselect`` options in ``config.option`` now that the user did not type
        (a plugin set them), as ``[dest, ...]``; empty when the typed ones could not be parsed."""
        return [d for d in TYPED if self.typed is not None and self._option(d) != self.typed[d]]

    def pytest_collection_modifyitems(self, items):
        """The profile's tests, before ``-k`` / ``-m`` / ``--deselect`` and other plugins deselect any."""
        self.collected, self.counted = len(items), list(items)

    def pytest_deselected(self, items):
        """Remember the tests whose deselection comes from pytest's selecting options (:data:`USER_ORIGINS`)."""
        origin = caller_module(2)
        if origin and origin.startswith(USER_ORIGINS) and not self.untyped():
            self.by_user.update(id(i) for i in items)
            self.user_ids += [str(getattr(i, "nodeid", i)) for i in items]

    def pytest_collection_finish(self, session):
        """The selected tests (under xdist: every worker writes the same counts; the controller collects none)
        and the ``dropped`` ones: counted, not selected, and not deselected by the user's options."""
        if self.collected is None:
            return
        kept = {id(i) for i in session.items}
        dropped = [str(getattr(i, "nodeid", i)) for i in self.counted if id(i) not in kept | self.by_user]
        extra = {"dropped": len(dropped), "droppedTests": dropped[:DROPPED_SHOWN]} if dropped else {}
        ids = {"byUser": self.user_ids, "selectedTests": [str(getattr(i, "nodeid", i)) for i in session.items]}
        if self.scope is not None and not hasattr(self.config, "workerinput"):  # a worker sees no typed options
            ids["scope"] = self.scope
        record(self.report_dir, collected=self.collected, selected=len(session.items), **extra, **ids)

    def pytest_sessionfinish(self, session):
        """The controller (or the only process): the narrowing arguments and whether the run stopped early,
        before the harness writes the final run.json."""
        if hasattr(self.config, "workerinput") or self.config.option.collectonly:
            return
        stopped = bool(getattr(session, "shouldfail", False) or getattr(session, "shouldstop", False))
        options = {**vars(self.config.option), **(self.typed or {})}  # the user's -k/-m/--deselect, not a plugin's
        rest = {d: None for d in (*TYPED, "stepwise", "stepwise_skip")}
        fields = arguments(options, self.config.args)
        fields["narrowsCollection"] = bool(arguments({**options, **rest}, self.config.args)["select"])
        fields.update({"untyped": self.untyped()} if self.untyped() else {})
        fields.update({"scope": self.scope} if self.scope is not None else {})
        record(self.report_dir, **fields, stoppedEarly=stopped, ini=ini_used(self.config))


def register(config, report_dir: Path) -> Recorder:
    """Register the :class:`Recorder` of this process; call it before the harness plugin is registered (its
    collection hook must run after the harness's ``--profile`` deselection)."""
    recorder = Recorder(config, report_dir)
    config.pluginmanager.register(recorder, "dra_conformance_narrowing")
    return recorder
