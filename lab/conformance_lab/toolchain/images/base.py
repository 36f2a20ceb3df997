"""The local cluster's own images: our static Go pause program (the pod sandbox) and busybox (probe and
helper pods), built from this machine's Go toolchain and Debian's busybox-static. Nothing is pulled.

Source: the pod sandbox image of containerd's CRI plugin (``sandbox_image``/``pinned_images.sandbox``); the
busybox test image of upstream ``test/e2e`` (a shell with coreutils applets).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from conformance_lab.toolchain.images import store
from conformance_lab.toolchain.images.oci import Entry, ImageError, write_oci_archive

PAUSE_SOURCE = Path(__file__).with_name("pause") / "main.go"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
PASSWD = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n"
GROUP = b"root:x:0:\nnogroup:x:65534:\n"


def build_pause() -> Path:
    """Build the pause program once per source version into the cache; returns the binary path.

    Raises ImageError when Go is missing or the build fails.
    """
    digest = hashlib.sha256(PAUSE_SOURCE.read_bytes()).hexdigest()[:12]
    out = store.images_dir() / f"pause-{digest}" / "pause"
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


def base_dirs() -> list[Entry]:
    """The directories every minimal image has (``/tmp`` sticky, ``/root`` private)."""
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


def account_files() -> list[Entry]:
    """``/etc/passwd`` and ``/etc/group`` with root and nobody."""
    return [("etc/passwd", "file", PASSWD, 0o644), ("etc/group", "file", GROUP, 0o644)]


def pause_key(ref: str) -> str:
    """Cache key of the pause image: the pause source and the image name (building needs Go, so the key
    does not need the binary)."""
    return store.cache_key("pause", PAUSE_SOURCE.read_bytes(), ref)


def pause_archive(ref: str) -> Path:
    """OCI tarball of the pause image (entrypoint ``/pause``), cached by source digest and ref."""

    def build(tmp: Path) -> None:
        binary = build_pause().read_bytes()
        write_oci_archive(tmp, ref, [*base_dirs(), ("pause", "file", binary, 0o755)], ["/pause"])

    return store.cached_archive("pause", pause_key(ref), build)


def find_busybox() -> Path:
    """The Debian busybox-static binary. Raises ImageError naming the package when absent."""
    for candidate in BUSYBOX_CANDIDATES:
        if os.path.isfile(candidate):
            return Path(candidate)
    raise ImageError("busybox is not installed; run `apt-get install -y busybox-static` (or make setup)")


def busybox_key(ref: str) -> str:
    """Cache key of the busybox image: the host's busybox binary and the image name."""
    return store.cache_key("busybox", find_busybox().read_bytes(), ref)


def busybox_archive(ref: str) -> Path:
    """OCI tarball of the busybox test image: /bin/busybox, one symlink per applet, ``Cmd: ["sh"]``."""
    busybox = find_busybox()

    def build(tmp: Path) -> None:
        applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
        entries = [*base_dirs(), ("bin/busybox", "file", busybox.read_bytes(), 0o755), *account_files()]
        entries += [(f"bin/{a}", "symlink", "busybox", 0o777) for a in sorted(set(applets)) if a != "busybox"]
        write_oci_archive(tmp, ref, entries, [], ["sh"])

    return store.cached_archive("busybox", busybox_key(ref), build)
