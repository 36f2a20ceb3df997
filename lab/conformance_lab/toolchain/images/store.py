"""The image cache outside the repository: archives and reusable layers, keyed by what they are built from.

Layout (under ``cache.root()/images``)::

    <name>-<key>.oci.tar          one OCI archive per image and input key (see oci.py)
    layers/<name>-<key>.<sha>.tar a layer reused across archives (e.g. the reference driver's Python runtime)
    debs/, work/                  downloaded .deb files; scratch trees of builds in progress

An entry is written under a temporary name, renamed last, and then replaces the older entries of its name
(other keys). An archive is trusted only after :func:`oci.verify_archive` re-hashed its blobs, a layer only
when its content hashes to the ``<sha>`` in its name. A half-written or corrupted entry is deleted and
rebuilt. Debian packages are kept (apt checked them against the signed index when it downloaded them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from conformance_lab.toolchain import cache
from conformance_lab.toolchain.images.oci import ImageConfig, ImageError, sha256_file, verify_archive, write_image


def images_dir() -> Path:
    """``<cache>/images`` (created on demand)."""
    path = cache.root() / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: object) -> str:
    """A 12-hex-digit key of ``parts`` (bytes, or JSON-able values; each typed and length-prefixed): same
    inputs, same key."""
    h = hashlib.sha256()
    for part in parts:
        raw = isinstance(part, bytes)
        data = part if raw else json.dumps(part, sort_keys=True, default=str).encode()
        h.update((b"b" if raw else b"j") + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:12]


def archive_path(name: str, key: str) -> Path:
    """Where the archive of image ``name`` built from inputs ``key`` lives (it may not exist)."""
    return images_dir() / f"{name}-{key}.oci.tar"


def lookup(name: str, key: str) -> Path | None:
    """The cached archive of ``name``/``key`` when it exists and verifies; a bad one is deleted (None)."""
    path = archive_path(name, key)
    if not path.is_file():
        return None
    try:
        verify_archive(path)
    except ImageError:
        path.unlink(missing_ok=True)
        return None
    return path


def cached_archive(name: str, key: str, build: Callable[[Path], object]) -> Path:
    """The verified archive of ``name``/``key``; on a miss ``build(tmp)`` writes it to a temporary path,
    which is verified and renamed into place. Raises ImageError when the build fails or its output does not
    verify; nothing is left behind then."""
    found = lookup(name, key)
    if found is not None:
        return found
    out = archive_path(name, key)
    for stale in out.parent.glob(f"{name}-*.oci.tar.partial-*"):
        if not _owner_alive(stale):
            stale.unlink(missing_ok=True)
    tmp = out.with_name(f"{out.name}.partial-{os.getpid()}")
    try:
        build(tmp)
        verify_archive(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    _prune(out.parent.glob(f"{name}-*.oci.tar"), out, lambda p: p.name[len(name) + 1 : -len(".oci.tar")])
    return out


def app_archive(
    name: str,
    ref: str,
    layers: list[Path],
    app_layer: Callable[[Path], Path],
    config: ImageConfig,
    *,
    build: bool,
    work: str = "app",
) -> Path | None:
    """The image ``name`` (``ref``) of the cached ``layers`` plus an application layer ``app_layer(path)``
    writes, keyed by the layers, the app layer's digest and the config. ``build=False`` only looks it up
    (None when missing); ``build=True`` writes it when missing. Raises ImageError (layer or archive writing)."""
    tmp = work_dir(work)
    try:
        app = app_layer(tmp / "app.tar")
        key = cache_key(name, ref, [p.name for p in layers], sha256_file(app), config)
        if not build:
            return lookup(name, key)
        return cached_archive(name, key, lambda out: write_image(out, ref, [*layers, app], config))
    finally:
        drop(tmp)


def cached_layer(name: str, key: str, build: Callable[[Path], object]) -> Path:
    """A reusable layer tar ``layers/<name>-<key>.<sha12>.tar``; on a miss ``build(tmp)`` writes it. A file
    whose content no longer hashes to its name is deleted and rebuilt."""
    found = find_layer(name, key)
    if found is not None:
        return found
    layers = images_dir() / "layers"
    tmp = layers / f"{name}-{key}.partial-{os.getpid()}"
    try:
        build(tmp)
        out = layers / f"{name}-{key}.{sha256_file(tmp)[:12]}.tar"
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    _prune(layers.glob(f"{name}-*.tar"), out, lambda p: p.name[len(name) + 1 :].split(".")[0])
    return out


def find_layer(name: str, key: str) -> Path | None:
    """The cached layer ``name``/``key`` whose content still hashes to its name; a bad one is deleted."""
    layers = images_dir() / "layers"
    layers.mkdir(exist_ok=True)
    for path in sorted(layers.glob(f"{name}-{key}.*.tar")):
        if sha256_file(path)[:12] == path.name.rsplit(".", 2)[1]:
            return path
        path.unlink(missing_ok=True)
    return None


def work_dir(name: str) -> Path:
    """A fresh scratch directory ``work/<name>-<pid>`` (the caller removes it with :func:`drop`)."""
    path = images_dir() / "work" / f"{name}-{os.getpid()}"
    drop(path)
    path.mkdir(parents=True)
    return path


def drop(path: Path) -> None:
    """Remove a scratch tree (ignores a missing one)."""
    shutil.rmtree(path, ignore_errors=True)


def _prune(siblings, keep: Path, key_of: Callable[[Path], str]) -> None:
    """Delete the older entries of the same image or layer name (other keys), so a changed input does not
    grow the cache without bound. Only plain 12-hex-digit keys count as siblings."""
    for path in siblings:
        if path != keep and re.fullmatch(r"[0-9a-f]{12}", key_of(path)):
            path.unlink(missing_ok=True)


def _owner_alive(partial: Path) -> bool:
    pid = partial.name.rsplit("-", 1)[-1]
    return pid.isdigit() and int(pid) != os.getpid() and os.path.exists(f"/proc/{pid}")
