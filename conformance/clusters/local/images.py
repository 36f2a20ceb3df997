"""Offline images for the local cluster: our static Go pause program and a busybox image, written as OCI
image-layout tarballs by Python and imported into every node's containerd with ``ctr images import``.
Nothing is ever pulled.

Source: OCI image-layout and image-spec v1.1 (index.json, blobs/sha256, manifest, config with
rootfs.diff_ids); containerd ``ctr images import`` reads the ref from the index annotation
``io.containerd.image.name`` (local-cluster.md §5.3).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from conformance.toolchain import cache

PAUSE_SOURCE = Path(__file__).with_name("pause") / "main.go"
DEFAULT_IMAGES = {"pause": "dra-conformance.local/pause:1", "busybox": "dra-conformance.local/busybox:1"}
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")

Entry = tuple[str, str, object, int]  # (path, kind file|dir|symlink, payload bytes|link target, mode)


class ImageError(RuntimeError):
    """An image could not be built or imported; the message names the missing tool and the fix."""


def _tar_add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tf.addfile(ti, io.BytesIO(data))


def layer_tar(entries: list[Entry]) -> bytes:
    """An uncompressed, reproducible (mtime 0, uid 0) layer tar of ``entries``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as lt:
        for path, kind, payload, mode in entries:
            ti = tarfile.TarInfo(path)
            ti.mtime, ti.mode, ti.uid, ti.gid = 0, mode, 0, 0
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
    return buf.getvalue()


def write_oci_archive(
    out: Path,
    ref: str,
    entries: list[Entry],
    entrypoint: list[str],
    cmd: list[str] = (),
    env: tuple[str, ...] = ("PATH=/bin:/usr/bin",),
    arch: str = "amd64",
) -> str:
    """Write a one-layer OCI image-layout tarball for ``ref``; returns the manifest digest (``sha256:...``)."""
    layer = layer_tar(entries)
    lsha = hashlib.sha256(layer).hexdigest()
    config = json.dumps(
        {
            "architecture": arch,
            "os": "linux",
            "config": {"Entrypoint": list(entrypoint), "Cmd": list(cmd), "Env": list(env), "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + lsha]},
        },
        sort_keys=True,
    ).encode()
    csha = hashlib.sha256(config).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": "sha256:" + csha,
                "size": len(config),
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + lsha, "size": len(layer)}
            ],
        },
        sort_keys=True,
    ).encode()
    msha = hashlib.sha256(manifest).hexdigest()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": "sha256:" + msha,
                    "size": len(manifest),
                    "platform": {"architecture": arch, "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": ref,
                        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1],
                    },
                }
            ],
        },
        sort_keys=True,
    ).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as tf:
        _tar_add(tf, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _tar_add(tf, "index.json", index)
        for sha, data in ((lsha, layer), (csha, config), (msha, manifest)):
            _tar_add(tf, f"blobs/sha256/{sha}", data)
    os.replace(tmp, out)
    return "sha256:" + msha


def _images_dir() -> Path:
    path = cache.root() / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_pause() -> Path:
    """Build the pause program once per source version into the cache; returns the binary path.

    Raises ImageError when Go is missing or the build fails.
    """
    digest = hashlib.sha256(PAUSE_SOURCE.read_bytes()).hexdigest()[:12]
    out = _images_dir() / f"pause-{digest}" / "pause"
    if out.is_file():
        return out
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go is None:
        raise ImageError("`go` is not installed; the pause image is built from source (install Go, run make setup)")
    tmp = out.with_name(f"pause.tmp-{os.getpid()}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOWORK="off", GOFLAGS="", GO111MODULE="auto")
    proc = subprocess.run(
        [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp), PAUSE_SOURCE.name],
        cwd=PAUSE_SOURCE.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise ImageError(f"building the pause program failed: {proc.stderr.strip()}")
    os.replace(tmp, out)
    return out


def _base_dirs() -> list[Entry]:
    return [
        ("bin", "dir", None, 0o755),
        ("dev", "dir", None, 0o755),
        ("etc", "dir", None, 0o755),
        ("proc", "dir", None, 0o755),
        ("sys", "dir", None, 0o755),
        ("tmp", "dir", None, 0o1777),
        ("var", "dir", None, 0o755),
        ("root", "dir", None, 0o700),
    ]


def pause_archive(ref: str) -> Path:
    """OCI tarball of the pause image (entrypoint ``/pause``), cached by binary digest and ref."""
    binary = build_pause().read_bytes()
    tag = hashlib.sha256(binary + ref.encode()).hexdigest()[:12]
    out = _images_dir() / f"pause-{tag}.oci.tar"
    if not out.is_file():
        write_oci_archive(out, ref, [*_base_dirs(), ("pause", "file", binary, 0o755)], ["/pause"])
    return out


def find_busybox() -> Path:
    """The Debian busybox-static binary. Raises ImageError naming the package when absent."""
    for candidate in BUSYBOX_CANDIDATES:
        if os.path.isfile(candidate):
            return Path(candidate)
    raise ImageError("busybox is not installed; run `apt-get install -y busybox-static` (or make setup)")


def busybox_archive(ref: str) -> Path:
    """OCI tarball of the busybox test image: /bin/busybox, one symlink per applet, ``Cmd: ["sh"]``."""
    busybox = find_busybox()
    binary = busybox.read_bytes()
    tag = hashlib.sha256(binary + ref.encode()).hexdigest()[:12]
    out = _images_dir() / f"busybox-{tag}.oci.tar"
    if out.is_file():
        return out
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    entries = _base_dirs() + [
        ("bin/busybox", "file", binary, 0o755),
        ("etc/passwd", "file", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n", 0o644),
        ("etc/group", "file", b"root:x:0:\nnogroup:x:65534:\n", 0o644),
    ]
    entries += [(f"bin/{a}", "symlink", "busybox", 0o777) for a in sorted(set(applets)) if a != "busybox"]
    write_oci_archive(out, ref, entries, [], ["sh"])
    return out


def import_image(ctr: Path, socket: Path, archive: Path) -> None:
    """``ctr -n k8s.io images import`` into one containerd. Raises ImageError with ctr's output."""
    base = [str(ctr), "--address", str(socket), "-n", "k8s.io", "images", "import", "--platform", "linux/amd64"]
    proc = subprocess.run([*base, "--local", str(archive)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "flag provided but not defined" in proc.stderr:
        proc = subprocess.run([*base, str(archive)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ImageError(f"ctr images import {archive.name} into {socket} failed: {proc.stderr.strip()}")
