"""OCI image-layout tarballs written by Python (no Docker, no registry) and checked before they are trusted.

An archive is a tar holding ``oci-layout``, ``index.json`` and ``blobs/sha256/<hex>``: one manifest, one
config and uncompressed layer tars (``application/vnd.oci.image.layer.v1.tar``, so digest == diff_id).
Layers are reproducible: members sorted, mtime 0, uid/gid 0, no user or group names.

Source: OCI image-layout and image-spec v1.1 (index.json, blobs/sha256, manifest, config with
rootfs.diff_ids); containerd ``ctr images import`` reads the image name from the index annotation
``io.containerd.image.name`` (local-cluster.md §5.3).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from conformance.images import ImageError  # noqa: F401 - re-exported for the lab's builders

Entry = tuple[str, str, object, int]  # (path, kind file|dir|symlink, payload bytes|link target, mode)
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
NAME_ANNOTATION = "io.containerd.image.name"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image config (image-spec ``config``): what a container runs by default."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    workdir: str = "/"
    labels: tuple[tuple[str, str], ...] = ()
    stop_signal: str = ""  # e.g. "SIGRTMIN+3" for an image whose entrypoint ends in systemd


@dataclasses.dataclass(frozen=True)
class ArchiveInfo:
    """What :func:`verify_archive` found: the image name (``ref``), manifest ``digest`` (``sha256:<hex>``),
    the layer digests in order and the archive size in bytes."""

    ref: str
    digest: str
    layers: tuple[str, ...]
    size: int


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _normalize(ti: tarfile.TarInfo) -> tarfile.TarInfo:
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "", ""
    return ti


def _add_entries(lt: tarfile.TarFile, entries: Iterable[Entry]) -> None:
    for path, kind, payload, mode in entries:
        ti = _normalize(tarfile.TarInfo(path))
        ti.mode = mode
        if kind == "dir":
            ti.type = tarfile.DIRTYPE
            lt.addfile(ti)
        elif kind == "symlink":
            ti.type, ti.linkname = tarfile.SYMTYPE, str(payload)
            lt.addfile(ti)
        else:
            data = bytes(payload)  # type: ignore[arg-type]
            ti.size = len(data)
            lt.addfile(ti, io.BytesIO(data))


def layer_tar(entries: list[Entry]) -> bytes:
    """An uncompressed, reproducible (mtime 0, uid 0) layer tar of ``entries``, in memory (small layers)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as lt:
        _add_entries(lt, entries)
    return buf.getvalue()


def entries_layer(out: Path, entries: list[Entry]) -> Path:
    """Write ``entries`` as a layer tar file ``out``; returns ``out``."""
    out.write_bytes(layer_tar(entries))
    return out


def tree_layer(out: Path, root: Path, prefix: str = "", exclude: tuple[str, ...] = ("__pycache__",)) -> Path:
    """Write the directory tree ``root`` as a reproducible layer tar ``out`` (paths under ``prefix``; names in
    ``exclude`` (glob patterns) skipped at any depth; hard links kept as tar links; the directories of
    ``prefix`` itself added first). Returns ``out``."""
    root = Path(root)

    def keep(name: str) -> bool:
        return not any(fnmatch.fnmatch(name, pattern) for pattern in exclude)

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as lt:
        parts = Path(prefix).parts
        for i in range(1, len(parts)):
            ti = _normalize(tarfile.TarInfo("/".join(parts[:i])))
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            lt.addfile(ti)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if keep(d))
            rel = os.path.relpath(dirpath, root)
            names = [] if rel == "." else [rel]
            names += [os.path.normpath(os.path.join(rel, n)) for n in sorted(filenames) if keep(n)]
            names += [
                os.path.normpath(os.path.join(rel, d)) for d in dirnames if os.path.islink(os.path.join(dirpath, d))
            ]
            if rel == "." and prefix:
                names = ["."] + names
            for name in names:
                arcname = os.path.normpath(os.path.join(prefix, name)) if prefix else name
                lt.add(root / name, arcname=arcname, recursive=False, filter=_normalize)
    return out


def _tar_add_bytes(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tf.addfile(ti, io.BytesIO(data))


def _json(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True).encode()


def write_image(out: Path, ref: str, layers: list[Path], config: ImageConfig, arch: str = "amd64") -> str:
    """Write an OCI image-layout tarball of ``layers`` (uncompressed layer tar files, bottom first) named
    ``ref`` to ``out``. Returns the manifest digest ``sha256:<hex>``. The caller picks ``out`` (write to a
    temporary name and rename: see ``store.cached_archive``)."""
    digests = [sha256_file(p) for p in layers]
    cfg = {"Entrypoint": list(config.entrypoint), "Cmd": list(config.cmd), "Env": list(config.env)}
    cfg["WorkingDir"] = config.workdir
    if config.labels:
        cfg["Labels"] = dict(config.labels)
    if config.stop_signal:
        cfg["StopSignal"] = config.stop_signal
    config_blob = _json(
        {
            "architecture": arch,
            "os": "linux",
            "config": cfg,
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in digests]},
        }
    )
    csha = hashlib.sha256(config_blob).hexdigest()
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": "sha256:" + csha,
                "size": len(config_blob),
            },
            "layers": [
                {"mediaType": LAYER_TYPE, "digest": "sha256:" + d, "size": p.stat().st_size}
                for d, p in zip(digests, layers, strict=True)
            ],
        }
    )
    msha = hashlib.sha256(manifest).hexdigest()
    index = _json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": MANIFEST_TYPE,
                    "digest": "sha256:" + msha,
                    "size": len(manifest),
                    "platform": {"architecture": arch, "os": "linux"},
                    "annotations": {NAME_ANNOTATION: ref, "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1]},
                }
            ],
        }
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w") as tf:
        _tar_add_bytes(tf, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _tar_add_bytes(tf, "index.json", index)
        for d, p in sorted(set(zip(digests, layers, strict=True))):
            ti = tf.gettarinfo(str(p), arcname=f"blobs/sha256/{d}")
            ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0o644, 0, 0, "", ""
            with open(p, "rb") as f:
                tf.addfile(ti, f)
        _tar_add_bytes(tf, f"blobs/sha256/{csha}", config_blob)
        _tar_add_bytes(tf, f"blobs/sha256/{msha}", manifest)
    return "sha256:" + msha


def write_oci_archive(
    out: Path,
    ref: str,
    entries: list[Entry],
    entrypoint: list[str],
    cmd: list[str] = (),
    env: tuple[str, ...] = ("PATH=/bin:/usr/bin",),
    arch: str = "amd64",
) -> str:
    """Write a one-layer OCI image-layout tarball of ``entries`` for ``ref`` (written to a temporary name,
    renamed last); returns the manifest digest (``sha256:...``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    layer = out.with_name(out.name + ".layer.tmp")
    tmp = out.with_name(out.name + ".tmp")
    try:
        entries_layer(layer, entries)
        digest = write_image(tmp, ref, [layer], ImageConfig(tuple(entrypoint), tuple(cmd), tuple(env)), arch)
        os.replace(tmp, out)
    finally:
        layer.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return digest


def verify_archive(path: Path) -> ArchiveInfo:
    """Re-hash every blob of the archive ``path`` against its name and check that the index's manifest, its
    config and every layer are present with the recorded sizes. Raises ImageError naming the archive and what
    is wrong (a half-written or corrupted archive is never trusted)."""
    try:
        with tarfile.open(path) as tf:
            members = {m.name: m for m in tf.getmembers() if m.isfile()}

            def read(name: str) -> bytes:
                if name not in members:
                    raise ImageError(f"{path}: {name} is missing")
                return tf.extractfile(members[name]).read()

            index = json.loads(read("index.json"))
            manifests = index.get("manifests") or []
            if len(manifests) != 1:
                raise ImageError(f"{path}: index.json lists {len(manifests)} manifests, expected 1")
            entry = manifests[0]
            ref = (entry.get("annotations") or {}).get(NAME_ANNOTATION, "")
            manifest = json.loads(read("blobs/sha256/" + entry["digest"].split(":", 1)[1]))
            for name, m in members.items():
                if not name.startswith("blobs/sha256/"):
                    continue
                h = hashlib.sha256()
                f = tf.extractfile(m)
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
                if h.hexdigest() != name.rsplit("/", 1)[1]:
                    raise ImageError(f"{path}: blob {name} does not match its digest (corrupted or half-written)")
            for desc in [entry, manifest["config"], *manifest["layers"]]:
                blob = "blobs/sha256/" + desc["digest"].split(":", 1)[1]
                if blob not in members or members[blob].size != desc["size"]:
                    raise ImageError(f"{path}: {blob} is missing or not {desc['size']} bytes")
    except (OSError, tarfile.TarError, ValueError, KeyError) as exc:
        raise ImageError(
            f"{path} is not a readable OCI archive ({type(exc).__name__}: {exc}); delete it and rebuild"
        ) from exc
    layers = tuple(d["digest"] for d in manifest["layers"])
    return ArchiveInfo(ref=ref, digest=entry["digest"], layers=layers, size=path.stat().st_size)
