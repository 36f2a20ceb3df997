"""Versioned on-disk checkpoint of prepared claims (tmp + fsync + rename), so a restarted plugin knows what
it prepared and can rewrite CDI specs that vanished.

File format (JSON)::

    {"version": 1, "checksum": "sha256:<hex of the canonical JSON of 'claims'>",
     "claims": {"<claim UID>": {"namespace": ..., "name": ..., "devices": [...], "cdiSpec": {...}}}}

Source: dra-example-driver checkpoint (versioned, checksummed, written atomically); KEP-4381 requires
unprepare to work from the driver's own state because the claim may be gone from the API server.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from . import files

VERSION = 1


class CheckpointError(RuntimeError):
    """Base class of checkpoint problems; messages name the file."""


class CheckpointCorrupt(CheckpointError):
    """The file is not valid JSON, fails its checksum or has the wrong shape."""


class CheckpointVersionError(CheckpointError):
    """The file was written by a different checkpoint version; it is left untouched."""


def _checksum(claims: dict) -> str:
    canonical = json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


class Checkpoint:
    """The checkpoint file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, dict]:
        """Prepared claims by UID; {} when the file does not exist.

        Raises CheckpointCorrupt or CheckpointVersionError (both naming the file).
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            doc = json.loads(raw)
        except ValueError as err:
            raise CheckpointCorrupt(f"checkpoint {self.path} is not valid JSON: {err}") from None
        if not isinstance(doc, dict) or "version" not in doc:
            raise CheckpointCorrupt(f"checkpoint {self.path} has no 'version' field")
        if doc["version"] != VERSION:
            raise CheckpointVersionError(
                f"checkpoint {self.path} has version {doc['version']!r}; this driver "
                f"reads version {VERSION}. Unprepare all claims with the driver that "
                "wrote it, or remove the file once no pod on this node uses a claim."
            )
        claims = doc.get("claims")
        if not isinstance(claims, dict) or not all(isinstance(v, dict) for v in claims.values()):
            raise CheckpointCorrupt(f"checkpoint {self.path}: 'claims' must map claim UIDs to objects")
        if doc.get("checksum") != _checksum(claims):
            raise CheckpointCorrupt(f"checkpoint {self.path}: checksum mismatch (file damaged or edited)")
        return claims

    def save(self, claims: dict[str, dict]) -> None:
        """Write ``claims`` atomically. Raises OSError."""
        doc = {"version": VERSION, "checksum": _checksum(claims), "claims": claims}
        files.write_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True).encode(), mode=0o600)

    def quarantine(self) -> Path | None:
        """Move a corrupt file aside to ``<name>.corrupt-<unix seconds>``; returns the new path (None if absent)."""
        if not self.path.exists():
            return None
        target = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        self.path.rename(target)
        files.fsync_dir(self.path.parent)
        return target
