"""Storing failure evidence: Allure attachments plus plain copies under ``<report_dir>/evidence/<test-id>/``.

Evidence pieces are ``(name, content, mime)`` tuples returned by ``pytest_dra_collect_evidence``
implementations (see :mod:`conformance.reporting.hookspecs`).
"""

from __future__ import annotations

import mimetypes
import pathlib
import re

EXTENSIONS = {
    "application/yaml": "yaml",
    "text/yaml": "yaml",
    "application/json": "json",
    "text/plain": "txt",
    "image/png": "png",
    "text/html": "html",
    "application/xml": "xml",
}


def test_id(nodeid: str) -> str:
    """A file-system safe directory name for a pytest node ID (``suites/a.py::test_x[p]`` ->
    ``suites_a.py__test_x_p_``); unique per node ID because only unsafe characters are replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", nodeid)[:200]


def extension(name: str, mime: str) -> str:
    """The file extension for a piece: the name's own when it has one, else one derived from ``mime``."""
    suffix = pathlib.PurePath(name).suffix.lstrip(".")
    if suffix and len(suffix) <= 5:
        return suffix
    return EXTENSIONS.get(mime) or (mimetypes.guess_extension(mime) or ".txt").lstrip(".")


def normalise(piece) -> tuple[str, bytes, str]:
    """Check one piece and return ``(name, content_bytes, mime)``.

    Raises ``TypeError`` naming the piece when it is not a ``(str, str|bytes, str)`` tuple.
    """
    if not (isinstance(piece, (tuple, list)) and len(piece) == 3):
        raise TypeError(f"evidence piece {piece!r:.80}: expected a (name, content, mime) tuple")
    name, content, mime = piece
    if not isinstance(name, str) or not isinstance(mime, str) or not isinstance(content, (str, bytes)):
        raise TypeError(
            f"evidence piece {name!r:.80}: expected (str, str|bytes, str), got "
            f"({type(name).__name__}, {type(content).__name__}, {type(mime).__name__})"
        )
    data = content.encode("utf-8") if isinstance(content, str) else content
    return name, data, mime


def write_copy(
    root: pathlib.Path, nodeid: str, when: str, index: int, name: str, data: bytes, mime: str
) -> pathlib.Path:
    """Write one piece to ``root/evidence/<test-id>/<when>-<index>-<name>.<ext>``; returns the path."""
    folder = root / "evidence" / test_id(nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", pathlib.PurePath(name).stem or "piece")[:80]
    path = folder / f"{when}-{index:02d}-{stem}.{extension(name, mime)}"
    path.write_bytes(data)
    return path
