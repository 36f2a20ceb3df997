"""The per-version binary cache outside the repository and how its entries become trusted.

Layout (``$XDG_CACHE_HOME/dra-conformance`` or ``~/.cache/dra-conformance``)::

    k8s/<tag>/bin/{kube-apiserver,...}   one entry per Kubernetes tag
    tools/<name>-<version>/bin/...       etcd, containerd, kwok, kind, helm, driver plugins
    work/...                             generated wrapper Go modules (scratch)

An entry is trusted only when its directory holds ``MANIFEST.json`` listing every binary with its size:
builds go to ``<entry>.partial-<pid>`` and are renamed into place last, so an interrupted or failed build
never leaves an entry a later run trusts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

MANIFEST = "MANIFEST.json"


class CacheMiss(FileNotFoundError):
    """A binary the caller needs is not in the cache; the message names the `make setup` that builds it."""


def root() -> Path:
    """The cache root (created on demand)."""
    base = os.environ.get("DRA_CONFORMANCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dra-conformance"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def k8s_entry(tag: str) -> Path:
    """Cache directory of one Kubernetes tag (e.g. ``v1.34.4``)."""
    return root() / "k8s" / tag


def tool_entry(name: str, version: str) -> Path:
    """Cache directory of one Go tool at one version."""
    return root() / "tools" / f"{name}-{version}"


def is_complete(entry: Path, binaries: list[str] | tuple[str, ...], fingerprint: str = "") -> bool:
    """True when ``entry`` has a manifest naming every binary, each file exists with the recorded size, and
    (when given) the manifest's build ``fingerprint`` matches, so a changed pin or build flag rebuilds."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if fingerprint and manifest.get("fingerprint") != fingerprint:
        return False
    files = manifest.get("files", {})
    for name in binaries:
        path = entry / "bin" / name
        if name not in files or not path.is_file() or path.stat().st_size != files[name]:
            return False
    return True


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Hold the per-entry build lock (``.<entry name>.lock`` beside ``entry``, fcntl, exclusive) for the block:
    two processes (xdist workers, two worktrees) building one entry build it once; the second waits, then finds
    it cached. :func:`partial_dir` removes every other partial of the entry, so a build must hold this lock."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f".{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def partial_dir(entry: Path) -> Path:
    """A fresh scratch directory next to ``entry`` for a build that is not trusted yet."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    for stale in entry.parent.glob(entry.name + ".partial-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = entry.parent / f"{entry.name}.partial-{os.getpid()}"
    (tmp / "bin").mkdir(parents=True)
    return tmp


def commit(tmp: Path, entry: Path, binaries: list[str] | tuple[str, ...], info: dict) -> None:
    """Write the manifest into ``tmp`` and rename it to ``entry`` (replacing an older, untrusted one).

    Raises FileNotFoundError if a binary the build promised is missing.
    """
    files = {}
    for name in binaries:
        path = tmp / "bin" / name
        if not path.is_file():
            raise FileNotFoundError(f"build did not produce {name} in {tmp / 'bin'}")
        files[name] = path.stat().st_size
    manifest = {"files": files, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **info}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    if entry.exists():
        shutil.rmtree(entry)
    os.rename(tmp, entry)


def k8s_binary(name: str, tag: str) -> Path:
    """Path of a cached Kubernetes binary; raises CacheMiss naming the setup command when it is absent."""
    path = k8s_entry(tag) / "bin" / name
    if not path.is_file() or not (k8s_entry(tag) / MANIFEST).is_file():
        minor = tag[1:].rsplit(".", 1)[0]
        raise CacheMiss(
            f"{name} for Kubernetes {tag} is not built; run `dra-conformance setup --k8s-version {minor}` "
            f"(`make setup K8S_VERSION={minor}` in a checkout)"
        )
    return path


def tool_binary(name: str, binary: str | None = None) -> Path:
    """Path of a cached Go tool binary at its pinned version (``binary`` defaults to ``name``).

    Raises CacheMiss naming `make setup` when it is absent.
    """
    from conformance_lab.toolchain import versions  # noqa: PLC0415 - versions imports cache

    tool = versions.load().go_tools.get(name)
    if tool is None:
        raise CacheMiss(f"no Go tool named {name!r} in versions.toml")
    binary = binary or tool.binaries[0]
    entry = tool_entry(name, tool.version)
    path = entry / "bin" / binary
    if not path.is_file() or not (entry / MANIFEST).is_file():
        raise CacheMiss(
            f"{binary} ({tool.module}@{tool.version}) is not built; run `dra-conformance setup` (`make setup` in a "
            "checkout)"
        )
    return path
