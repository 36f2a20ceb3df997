"""Versioned on-disk checkpoint of prepared claims (tmp + fsync + rename), so a restarted plugin knows what
it prepared and can rewrite CDI specs that vanished.

File formats (JSON). Format 1 (this driver before checkpoint format 2; still written with
``--checkpoint-format v1``)::

    {"version": 1, "checksum": "sha256:<hex of the canonical JSON of 'claims'>",
     "claims": {"<claim UID>": {"namespace": ..., "name": ..., "devices": [...], "cdiSpec": {...}}}}

Format 2 (default): a list of entries, each carrying its claim UID, sorted by UID::

    {"version": 2, "checksum": "sha256:<hex of the canonical JSON of 'preparedClaims'>",
     "preparedClaims": [{"uid": "<claim UID>", "namespace": ..., "name": ..., "devices": [...], ...}]}

:meth:`Checkpoint.load` reads both and returns the same ``{uid: entry}`` map; ``loaded_version`` says which
format the file had, so the caller can migrate it (rewrite in the write format). A version above 2 is
refused (:class:`CheckpointVersionError`): never discard a newer driver's state.

Source: dra-example-driver checkpoint (versioned, checksummed, written atomically); KEP-4381 requires
unprepare to work from the driver's own state because the claim may be gone from the API server.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from . import files

VERSION = 2
READABLE = (1, 2)
_KEY = {1: "claims", 2: "preparedClaims"}


class CheckpointError(RuntimeError):
    """Base class of checkpoint problems; messages name the file."""


class CheckpointCorrupt(CheckpointError):
    """The file is not valid JSON, fails its checksum or has the wrong shape."""


class CheckpointVersionError(CheckpointError):
    """The file was written by a checkpoint version this driver cannot read; it is left untouched."""


def _checksum(payload: dict | list) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _claims_of(doc: dict, version: int, path: Path) -> dict[str, dict]:
    """``{uid: entry}`` from the payload of a format ``version`` document. Raises CheckpointCorrupt."""
    payload = doc.get(_KEY[version])
    if version == 1:
        if not isinstance(payload, dict) or not all(isinstance(v, dict) for v in payload.values()):
            raise CheckpointCorrupt(f"checkpoint {path}: 'claims' must map claim UIDs to objects")
        claims = payload
    else:
        if not isinstance(payload, list) or not all(isinstance(e, dict) and e.get("uid") for e in payload):
            raise CheckpointCorrupt(f"checkpoint {path}: 'preparedClaims' must be a list of objects with a uid")
        claims = {e["uid"]: {k: v for k, v in e.items() if k != "uid"} for e in payload}
    if doc.get("checksum") != _checksum(payload):
        raise CheckpointCorrupt(f"checkpoint {path}: checksum mismatch (file damaged or edited)")
    return claims


class Checkpoint:
    """The checkpoint file at ``path``, written in format ``write_version`` (1 or 2; ValueError otherwise).
    ``loaded_version``: the format of the file the last :meth:`load` read (None: no file or not loaded)."""

    def __init__(self, path: Path, write_version: int = VERSION) -> None:
        if write_version not in READABLE:
            raise ValueError(f"checkpoint format {write_version!r}: use one of {READABLE}")
        self.path = Path(path)
        self.write_version = write_version
        self.loaded_version: int | None = None

    def load(self) -> dict[str, dict]:
        """Prepared claims by UID, from a format 1 or 2 file; {} when the file does not exist.

        Raises CheckpointCorrupt or CheckpointVersionError (both naming the file).
        """
        self.loaded_version = None
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
        if doc["version"] not in READABLE:
            raise CheckpointVersionError(
                f"checkpoint {self.path} has version {doc['version']!r}; this driver "
                f"reads versions {list(READABLE)}. Unprepare all claims with the driver that "
                "wrote it, or remove the file once no pod on this node uses a claim."
            )
        claims = _claims_of(doc, doc["version"], self.path)
        self.loaded_version = doc["version"]
        return claims

    def save(self, claims: dict[str, dict]) -> None:
        """Write ``claims`` atomically in format ``write_version``. Raises OSError."""
        if self.write_version == 1:
            payload: dict | list = claims
        else:
            payload = [{"uid": uid, **entry} for uid, entry in sorted(claims.items())]
        doc = {"version": self.write_version, "checksum": _checksum(payload), _KEY[self.write_version]: payload}
        files.write_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True).encode(), mode=0o600)

    def quarantine(self) -> Path | None:
        """Move a corrupt file aside to ``<name>.corrupt-<unix seconds>``; returns the new path (None if absent)."""
        if not self.path.exists():
            return None
        target = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        self.path.rename(target)
        files.fsync_dir(self.path.parent)
        return target
