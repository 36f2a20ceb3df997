"""Report history across runs and the ``latest`` link.

Allure 3 keeps history in one JSONL file (``historyPath``; each ``allure generate`` appends a point).
Each run directory owns ``history/history.jsonl``; before generating, the previous run's file (the newest
sibling run directory of the same kind) is copied to ``history/base.jsonl`` once, and ``history.jsonl`` is
reset from it, so regenerating a run never appends the same run twice. In CI, where each night starts from
an empty ``reports/``, ``--history-from PATH`` (:func:`restore`) names last night's saved history instead of a
sibling run. Source: reporting.md §2.3 (Allure 3 history), allure3 ``packages/core/src/history.ts``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil

MATRIX_MARKER = "matrix-plan.json"


def is_matrix(run_dir: pathlib.Path) -> bool:
    """Whether ``run_dir`` is a matrix report (holds the plan written by the matrix runner)."""
    return (run_dir / MATRIX_MARKER).is_file()


def in_matrix(run_dir: pathlib.Path) -> bool:
    """Whether ``run_dir`` is one cell of a matrix (its parent is a matrix report)."""
    return is_matrix(run_dir.resolve().parent)


def previous(run_dir: pathlib.Path) -> pathlib.Path | None:
    """The history file of the newest sibling run of the same kind (run or matrix; for a matrix cell, the
    same version's cell of the newest other matrix), ``None`` if none."""
    run_dir = run_dir.resolve()
    candidates = []
    if in_matrix(run_dir):  # a cell: the same version's cell of the previous matrix
        for matrix in run_dir.parent.parent.iterdir():
            hist = matrix / run_dir.name / "history" / "history.jsonl"
            if matrix != run_dir.parent and not matrix.is_symlink() and is_matrix(matrix) and hist.is_file():
                candidates.append((hist.stat().st_mtime, hist))
        return max(candidates)[1] if candidates else None
    for sibling in run_dir.parent.iterdir():
        if sibling == run_dir or sibling.is_symlink() or not sibling.is_dir():
            continue
        hist = sibling / "history" / "history.jsonl"
        if hist.is_file() and is_matrix(sibling) == is_matrix(run_dir):
            candidates.append((hist.stat().st_mtime, hist))
    return max(candidates)[1] if candidates else None


def saved_history(path: pathlib.Path) -> pathlib.Path | None:
    """The Allure 3 history file a ``--history-from PATH`` names: ``PATH`` itself (a file), or
    ``PATH/history.jsonl`` or ``PATH/history/history.jsonl`` (a directory: a CI cache folder or a previous run
    directory). ``None`` when PATH does not exist or holds no history yet (the first night: a new history
    starts). Raises ValueError naming the file and the fix when a line is not a JSON object."""
    path = pathlib.Path(path)
    if path.is_dir():
        found = [p for p in (path / "history.jsonl", path / "history" / "history.jsonl") if p.is_file()]
        if not found:
            return None
        path = found[0]
    elif not path.is_file():
        return None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            ok = not line.strip() or isinstance(json.loads(line), dict)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"--history-from {path}: line {number} is not a JSON object; pass the history.jsonl an earlier "
                "report wrote (reports/<run-id>/history/history.jsonl) or an empty folder to start a new history"
            )
    return path


def prepare(run_dir: pathlib.Path, history_from: pathlib.Path | None = None) -> pathlib.Path:
    """Set up ``run_dir/history/history.jsonl`` from the previous run, or from ``history_from`` (see
    :func:`saved_history`; it replaces the run's base each time, so regenerating stays idempotent); returns
    its path. Raises ValueError on a malformed ``history_from`` file."""
    folder = run_dir / "history"
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.jsonl"
    if history_from is not None:
        saved = saved_history(history_from)
        if saved is not None:
            shutil.copyfile(saved, base)
        else:
            base.write_text("", encoding="utf-8")
    elif not base.exists():
        prev = previous(run_dir)
        if prev is not None:
            shutil.copyfile(prev, base)
        else:
            base.write_text("", encoding="utf-8")
    current = folder / "history.jsonl"
    shutil.copyfile(base, current)
    return current


def points(history_file: pathlib.Path) -> int:
    """Number of history points (non-empty lines) in an Allure 3 history file."""
    if not history_file.is_file():
        return 0
    return sum(1 for line in history_file.read_text(encoding="utf-8").splitlines() if line.strip())


def _started(run_dir: pathlib.Path) -> float:
    """When the run of ``run_dir`` started (run.json ``started``, else the directory's mtime; 0 when unreadable)."""
    try:
        data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        return float(data["started"])
    except (OSError, ValueError, KeyError, TypeError):
        try:
            return run_dir.stat().st_mtime
        except OSError:
            return 0.0


def update_latest(run_dir: pathlib.Path) -> pathlib.Path:
    """Point ``<parent>/latest`` at ``run_dir`` (relative symlink, replaced atomically) unless it already points
    at a run that started later (regenerating an old report never moves ``latest`` back); returns the link."""
    run_dir = run_dir.resolve()
    link = run_dir.parent / "latest"
    if run_dir == link:  # a report dir named latest is its own latest (s16 new-user review 7)
        return link
    if link.exists() and not link.is_symlink():
        raise FileExistsError(f"{link} exists and is not a symlink; move it away so the latest run can be linked")
    if link.is_symlink() and link.exists() and _started(link.resolve()) > _started(run_dir):
        return link
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(run_dir.name, target_is_directory=True)
    os.replace(tmp, link)
    return link
