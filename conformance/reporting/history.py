"""Report history across runs and the ``latest`` link.

Allure 3 keeps history in one JSONL file (``historyPath``; each ``allure generate`` appends a point).
Each run directory owns ``history/history.jsonl``; before generating, the previous run's file (the newest
sibling run directory of the same kind) is copied to ``history/base.jsonl`` once, and ``history.jsonl`` is
reset from it, so regenerating a run never appends the same run twice. Source: reporting.md §2.3
(Allure 3 history), allure3 ``packages/core/src/history.ts``.
"""

from __future__ import annotations

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


def prepare(run_dir: pathlib.Path) -> pathlib.Path:
    """Set up ``run_dir/history/history.jsonl`` from the previous run; returns its path."""
    folder = run_dir / "history"
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.jsonl"
    if not base.exists():
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


def update_latest(run_dir: pathlib.Path) -> pathlib.Path:
    """Point ``<parent>/latest`` at ``run_dir`` (relative symlink, replaced atomically); returns the link."""
    run_dir = run_dir.resolve()
    link = run_dir.parent / "latest"
    if link.exists() and not link.is_symlink():
        raise FileExistsError(f"{link} exists and is not a symlink; move it away so the latest run can be linked")
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(run_dir.name, target_is_directory=True)
    os.replace(tmp, link)
    return link
