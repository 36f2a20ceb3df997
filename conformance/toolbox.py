"""Where the programs and files a run needs come from: the locator seam.

The plugin needs a few outside programs (``helm``; ``kubectl`` of the cluster's version; a third-party kubelet
plugin binary for the ``host`` deploy mode), a driver's chart inside its Go module, and offline image archives
for clusters that take archives. It never builds them. A *locator* supplies them: an object registered under the
entry point group ``dra_conformance.locators`` (value ``module:attribute``) with any of these methods, each
returning None when it does not know:

* ``program(name, *, tool, k8s_version) -> Path | None`` — an executable;
* ``go_module_dir(tool, inside) -> Path | None`` — a directory inside a pinned Go module's source tree;
* ``k8s_versions() -> tuple[str, ...]`` — the Kubernetes minors it can provide (for error messages);
* ``version_of(tool) -> str | None`` — ``module@version`` of a pinned tool (recorded in the report);
* ``build_images(names, local_images) -> list[tuple[Path, str]] | None`` — OCI archives and their references.

The lab (``dra-conformance-lab``) registers one that builds everything offline into the user's cache. Without a
locator, ``program`` falls back to ``$DRA_CONFORMANCE_<NAME>`` (e.g. ``DRA_CONFORMANCE_HELM``) and then ``PATH``,
which is how a user's installed ``helm`` and ``kubectl`` are found. Pattern: importlib.metadata entry points
(PyPA entry points specification).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

GROUP = "dra_conformance.locators"


class ToolMissing(FileNotFoundError):
    """A program or file the run needs was found nowhere; the message names what was searched and the fix."""


@functools.cache
def locators() -> tuple[Any, ...]:
    """The registered locators, in entry point name order (loaded once per process). An entry point that fails
    to load raises ToolMissing naming it."""
    found = []
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken third-party locator is named, not hidden
            raise ToolMissing(f"locator {ep.name} ({ep.value}) failed to load: {exc}") from None
        found.append(obj() if isinstance(obj, type) else obj)
    return tuple(found)


def _ask(method: str, *args: Any, **kwargs: Any) -> Any:
    for loc in locators():
        fn = getattr(loc, method, None)
        if fn is not None and (answer := fn(*args, **kwargs)) is not None:
            return answer
    return None


def env_name(name: str) -> str:
    """``DRA_CONFORMANCE_<NAME>``: the variable that points at program ``name`` (``-`` becomes ``_``)."""
    return "DRA_CONFORMANCE_" + name.upper().replace("-", "_")


def program(name: str, *, tool: str | None = None, k8s_version: str | None = None) -> Path:
    """An executable ``name`` (``tool``: the pinned Go tool that builds it, when it differs from ``name``;
    ``k8s_version``: for a Kubernetes binary such as ``kubectl``, the cluster's ``v1.x.y``). Order: the
    locators, ``$DRA_CONFORMANCE_<NAME>``, ``PATH``. Raises ToolMissing naming all three and the fix."""
    path = _ask("program", name, tool=tool, k8s_version=k8s_version)
    if path is not None:
        return Path(path)
    var = env_name(name)
    if os.environ.get(var):
        given = Path(os.environ[var])
        if given.is_file() and os.access(given, os.X_OK):
            return given
        raise ToolMissing(f"${var}={given} is not an executable file; fix the variable or unset it")
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise ToolMissing(
        f"{name} was not found (no locator provides it, ${var} is unset, it is not on PATH); install {name} "
        f"and put it on PATH, set {var}=/path/to/{name}, or install dra-conformance-lab and run its setup"
    )


def go_module_dir(tool: str, inside: str = "") -> Path:
    """``<module source of the pinned Go tool>/<inside>`` from a locator. Raises ToolMissing when none has it."""
    path = _ask("go_module_dir", tool, inside)
    if path is None:
        raise ToolMissing(
            f"no locator provides the Go module of {tool!r} ({inside or 'its root'}); install dra-conformance-lab "
            "and run `dra-conformance setup`, or point the profile at a chart directory, repository or oci:// ref"
        )
    return Path(path)


def k8s_versions() -> tuple[str, ...]:
    """Kubernetes minors the locators can provide (empty without one)."""
    return tuple(_ask("k8s_versions") or ())


def version_of(tool: str) -> str:
    """``module@version`` of a pinned tool, or "" when no locator knows it."""
    return str(_ask("version_of", tool) or "")


def build_images(names: Iterable[str], local_images: dict[str, str]) -> list[tuple[Path, str]]:
    """``[(OCI archive, reference)]`` of the named offline images. Raises ToolMissing when no locator builds
    images (the names come from a profile's ``deploy.images``)."""
    names = list(names)
    built = _ask("build_images", names, local_images)
    if built is None:
        raise ToolMissing(
            f"images {', '.join(names)} need a builder: install dra-conformance-lab, or drop deploy.images and "
            "let the nodes pull the chart's images from a registry"
        )
    return [(Path(p), str(r)) for p, r in built]
