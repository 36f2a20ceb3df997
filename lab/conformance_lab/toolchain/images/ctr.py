"""Loading archives into a containerd with its own ``ctr`` client (the ``k8s.io`` namespace the CRI plugin,
and so the kubelet, reads). Nothing is pulled.

Source: containerd ``ctr images import`` (``--local`` on containerd 2 imports without the transfer
service; older clients lack the flag), ``ctr images ls -q``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conformance_lab.toolchain.images.oci import ImageError

NAMESPACE = "k8s.io"


def _base(ctr: Path, socket: Path) -> list[str]:
    return [str(ctr), "--address", str(socket), "-n", NAMESPACE]


def import_image(ctr: Path, socket: Path, archive: Path) -> None:
    """``ctr -n k8s.io images import`` of one archive into the containerd at ``socket``. Raises ImageError
    with ctr's output."""
    base = [*_base(ctr, socket), "images", "import", "--platform", "linux/amd64"]
    proc = subprocess.run([*base, "--local", str(archive)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "flag provided but not defined" in proc.stderr:
        proc = subprocess.run([*base, str(archive)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise ImageError(f"ctr images import {archive.name} into {socket} failed: {proc.stderr.strip()}")


def image_names(ctr: Path, socket: Path) -> set[str]:
    """The image names the containerd at ``socket`` holds in ``k8s.io``. Raises ImageError when ctr fails."""
    proc = subprocess.run([*_base(ctr, socket), "images", "ls", "-q"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ImageError(f"ctr images ls on {socket} failed: {proc.stderr.strip()}")
    return set(proc.stdout.split())
