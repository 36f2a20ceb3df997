"""Loading archives into a containerd with its own ``ctr`` client (the ``k8s.io`` namespace the CRI plugin,
and so the kubelet, reads). Nothing is pulled.

Source: containerd ``ctr images import`` (``--local`` on containerd 2 imports without the transfer
service; older clients lack the flag; ``--digests --base-name REPO`` adds the name ``REPO@sha256:<manifest>``,
which the CRI plugin reports as a repo digest, so the kubelet lists it in ``Node.status.images`` and a pod may
name the image by digest: how the helper pods are pinned), ``ctr images ls -q``.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

from conformance_lab.toolchain.images.oci import ImageError

NAMESPACE = "k8s.io"


def _base(ctr: Path, socket: Path) -> list[str]:
    return [str(ctr), "--address", str(socket), "-n", NAMESPACE]


def import_image(ctr: Path, socket: Path, archive: Path) -> None:
    """``ctr -n k8s.io images import`` of one archive into the containerd at ``socket``. Raises ImageError
    with ctr's output."""
    base = [*_base(ctr, socket), "images", "import", "--platform", "linux/amd64", *_digest_name(archive)]
    proc = subprocess.run([*base, "--local", str(archive)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "flag provided but not defined" in proc.stderr:
        proc = subprocess.run([*base, str(archive)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise ImageError(f"ctr images import {archive.name} into {socket} failed: {proc.stderr.strip()}")


def _digest_name(archive: Path) -> list[str]:
    """``["--digests", "--base-name", REPO]`` for the archive's one named image (index.json annotation
    ``io.containerd.image.name``, its tag dropped); [] when it names none (then only the tag name is created)."""
    try:
        with tarfile.open(archive) as tf:
            index = json.load(tf.extractfile("index.json"))
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return []
    names = {m.get("annotations", {}).get("io.containerd.image.name", "") for m in index.get("manifests", [])}
    names.discard("")
    if len(names) != 1:
        return []
    name = names.pop().split("@")[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    return ["--digests", "--base-name", repo]


def image_names(ctr: Path, socket: Path) -> set[str]:
    """The image names the containerd at ``socket`` holds in ``k8s.io``. Raises ImageError when ctr fails."""
    proc = subprocess.run([*_base(ctr, socket), "images", "ls", "-q"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ImageError(f"ctr images ls on {socket} failed: {proc.stderr.strip()}")
    return set(proc.stdout.split())
