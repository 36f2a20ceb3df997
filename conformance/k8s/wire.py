"""What the API server sends besides JSON bodies: the ``Warning`` response headers and the newline-delimited
event stream of a watch. Pure functions over text and byte chunks (the client does the I/O).

Sources: RFC 7234 ``Warning: 299 - "text"`` headers as kube-apiserver sends them (KEP-1693); the watch
protocol's one JSON ``{"type", "object"}`` event per line, ``ERROR`` with a Status of code 410 for an
expired resourceVersion (Kubernetes API concepts, "Efficient detection of changes").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from conformance.core import errors

_WARNING = re.compile(r'^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')


def warning_texts(values: Iterable[str]) -> list[str]:
    """The texts of ``Warning`` header values (several may share one header, comma-separated); a value that
    is not in the ``<code> <agent> "<text>"`` form is kept whole."""
    texts = []
    for value in values:
        for part in re.split(r",(?=\s*\d{3}\s)", value):
            m = _WARNING.match(part)
            texts.append(m.group(1) if m else part.strip())
    return texts


def watch_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, dict]]:
    """``(type, object dict)`` for each event line of a watch stream given as byte chunks. Raises
    :class:`~conformance.core.errors.Gone` for the ``ERROR`` event of an expired resourceVersion (410)."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR" and obj.get("code") == 410:
                    raise errors.Gone(410, "Expired", obj.get("message", ""), obj, "WATCH")
                yield event.get("type", ""), obj
