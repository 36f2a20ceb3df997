"""What ``dra-conformance run`` refuses or sets before pytest starts, and the report directory it leaves behind.

- :data:`OWN_INI` / :func:`ini_args`: the run's only pytest configuration (``-c conformance/pytest-run.ini`` with an
  explicit ``--rootdir`` and ``--confcutdir``), so an ini file above the install (a driver repository's
  ``pyproject.toml`` with ``addopts = --reruns 2``) never applies (breaker s15 C3); run.json's ``narrowing.ini``
  records the file pytest used (conformance/runner/narrowing.py);
- :func:`refused_option`: reruns (pytest-rerunfailures' ``--reruns``, ``--reruns-delay``, ``--only-rerun``,
  ``--rerun-except``, ``-p rerunfailures``) are refused with exit 4: a qualification says whether the driver
  works, and a driver that fails and then passes on a retry is not proven to (breaker s15 C1); the plugin is
  also blocked (``-p no:rerunfailures``) so no ini can turn it on, and a rerun option in ``PYTEST_ADDOPTS`` (a
  CI's inherited ``--reruns 2``) is refused naming that variable, not with pytest's bare "unrecognized
  arguments" (breaker s15 D4);
- :func:`unusable_report_dir`: a ``--report-dir`` that is a file, lies under a file or cannot be created is
  refused (exit 4) before pytest starts, naming the OS error (breaker s16 new-user F3);
- :func:`stale_report_dir`: a ``--report-dir`` that already holds an earlier run's results is refused (exit 4):
  two runs' results never mix in one report (a reused directory's old attempts would count as this run's); a
  junit.xml alone is no earlier run's (a CI workspace's unit-test step writes one), and the fix offered is a
  subdirectory, never removing the directory (a CI workspace; breaker s15 D9);
- :func:`refusal`: the first of those refusals for a run, as the error line ``run`` prints before pytest starts;
- :func:`drop_if_empty`: a report directory the run created and left empty (a refused run) is removed; one that
  existed before (a CI volume, a mount point) is left, and a failure to remove never changes the exit code
  (breaker s15 C4).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from conformance import shipped

OWN_INI = shipped.PACKAGE / "pytest-run.ini"
RERUN_OPTIONS = ("--reruns", "--reruns-delay", "--only-rerun", "--rerun-except", "--force-flaky")
RERUN_PLUGINS = ("rerunfailures", "pytest_rerunfailures")
RUN_FILES = ("allure-results", "run.json", "summary.json")  # a run's own marks (a junit.xml may be a CI's)


def ini_args() -> list[str]:
    """``["-c", OWN_INI, "--rootdir", ..., "--confcutdir", ..., "-p", "no:rerunfailures"]``: the run's own pytest
    configuration, rooted where the suites' package is (:func:`conformance.shipped.test_root`)."""
    root = str(shipped.test_root())
    return ["-c", str(OWN_INI), "--rootdir", root, "--confcutdir", root, "-p", "no:rerunfailures"]


def refused_option(extra: list[str]) -> str | None:
    """The first of the extra pytest arguments ``extra`` that ``run`` refuses (a rerun option or ``-p`` of the
    rerun plugin), as typed; None when there is none."""
    for index, arg in enumerate(extra):
        if arg.split("=", 1)[0] in RERUN_OPTIONS:
            return arg
        plugin = arg[2:] if arg.startswith("-p") and len(arg) > 2 else None
        if arg == "-p" and index + 1 < len(extra):
            plugin = extra[index + 1]
        if plugin is not None and plugin.strip() in RERUN_PLUGINS:
            return f"-p {plugin.strip()}"
    return None


def refusal_text(option: str, source: str = "") -> str:
    """The error line for a refused rerun ``option``; ``source``: where it came from when not typed on the
    command line (``PYTEST_ADDOPTS``), named first and in the fix."""
    where = f"{source} holds {option}" if source else option
    drop = f"drop the option from {source} (e.g. run with {source}= )" if source else "drop the option"
    return (
        f"{where}: a qualification run does not retry failed tests (a driver that fails and then passes on a "
        f"retry is not proven to work); fix: {drop}, and report a failure that only happens sometimes as the "
        "driver defect it is"
    )


def addopts(env: Mapping[str, str] | None = None) -> list[str]:
    """``PYTEST_ADDOPTS`` of ``env`` (default ``os.environ``) split as pytest splits it (``shlex.split``); ``[]``
    when unset or unbalanced (pytest then reports the quoting itself)."""
    try:
        return shlex.split((os.environ if env is None else env).get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return []


def refusal(
    extra: list[str], report_dir: Path, env: Mapping[str, str] | None = None, *, given: bool = True
) -> str | None:
    """Why ``run`` refuses to start, as the error line it prints (exit 4) before pytest starts; None when it
    may. In order: a rerun option in the extra pytest arguments ``extra``, one in ``PYTEST_ADDOPTS`` of ``env``
    (default ``os.environ``), a ``report_dir`` the run cannot use (:func:`unusable_report_dir`; ``given``: it
    was typed as ``--report-dir``, else it is the default ``reports/<run-id>``), a ``report_dir`` holding an
    earlier run's results (:func:`stale_report_dir`)."""
    if (option := refused_option(extra)) is not None:
        return refusal_text(option)
    if (option := refused_option(addopts(env))) is not None:
        return refusal_text(option, "PYTEST_ADDOPTS")
    return unusable_report_dir(report_dir, given) or stale_report_dir(report_dir)


def unusable_report_dir(report_dir: Path, given: bool = True) -> str | None:
    """Why the run could not write ``report_dir`` (an absolute path), as an error line naming it and the fix;
    None when it can. Refused: an existing file (not a directory), a path under a file, an existing directory
    this process may not write, a path whose missing directories cannot be made (EACCES, EROFS, ENOENT under
    /proc: the OS error is named). The missing directories are made to find out and removed again at once, so
    the check leaves nothing behind (breaker s16 new-user F3: each was an INTERNALERROR read as exit 3)."""
    what = f"--report-dir {report_dir}" if given else f"the report directory {report_dir} (the default)"
    fix = "give a directory you can write" + (" (or leave --report-dir out: reports/<run-id>)" if given else "")
    fix = fix if given else f"{fix}: pass --report-dir DIR, or run from a directory you can write"
    if report_dir.is_dir():
        if os.access(report_dir, os.W_OK | os.X_OK):
            return None
        return f"{what}: not writable by this user; fix: {fix}"
    missing, above = [], report_dir
    while not above.exists() and not above.is_symlink():  # the nearest path that exists (a file, or a directory)
        missing.append(above)
        above = above.parent
    if above != report_dir and not above.is_dir():
        return f"{what}: {above} is a file, not a directory; fix: {fix}"
    if not above.is_dir():
        return f"{what}: exists and is not a directory (a file); fix: {fix}"
    made: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            made.append(path)
    except OSError as exc:
        return f"{what}: cannot be created ({exc.strerror or exc}); fix: {fix}"
    finally:
        for path in reversed(made):  # the run makes it itself (and removes it when it leaves it empty)
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def stale_report_dir(report_dir: Path) -> str | None:
    """Why ``report_dir`` cannot take this run's results (it holds an earlier run's: a non-empty
    ``allure-results/``, a ``run.json`` or a ``summary.json``; a junit.xml alone is not one), as an error line
    naming the directory and the fix (a subdirectory: the directory may be a CI workspace, so it never says
    to remove it); None when it is new or holds none of them."""
    allure = report_dir / "allure-results"
    held = [n for n in RUN_FILES if (report_dir / n).is_file()]
    if allure.is_dir() and any(allure.iterdir()):
        held.insert(0, "allure-results/")
    if not held:
        return None
    return (
        f"--report-dir {report_dir} already holds the results of an earlier run ({', '.join(held)}): the results "
        f"of two runs must not mix; fix: use a subdirectory, e.g. --report-dir {report_dir / 'conformance'}, or "
        "another new directory (or leave --report-dir out: reports/<run-id>)"
    )


def drop_if_empty(report_dir: Path, existed: bool, default_parent: bool) -> None:
    """Remove ``report_dir`` when it holds no file and the run created it (``existed``: it was there before the
    run; then it is left, e.g. an empty mount point), and its parent ``./reports`` when it is the default one
    (``default_parent``) and now empty. A directory that cannot be removed is left, with a note on stderr."""
    if existed or not report_dir.is_dir() or any(p.is_file() for p in report_dir.rglob("*")):
        return
    try:
        shutil.rmtree(report_dir)
    except OSError as exc:
        print(f"note: left the empty report directory {report_dir} ({exc.strerror or exc})", file=sys.stderr)
        return
    if default_parent:
        with contextlib.suppress(OSError):
            report_dir.parent.rmdir()
