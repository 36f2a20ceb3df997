"""Pinned Go tools that `make setup` leaves out (kwok, kind, helm, registry, dranet, dra-example-driver, ...)
are built the first time something looks them up, with a progress line, instead of failing.

``tool_binary(name)`` is :func:`conformance_lab.toolchain.cache.tool_binary` that builds the tool on a miss:
it prints ``building helm v3.22.0 (first use, up to ~2 min; `dra-conformance setup --all` (`make setup-all` in a
checkout) builds everything ahead)...`` to stderr (the minutes: versions.toml ``build_minutes``, else :data:`MINUTES`),
builds under a per-entry file lock (two xdist workers or two runs build once; the second waits and finds it
cached), and prints ``built helm v3.22.0 in 95 s``. ``DRA_CONFORMANCE_BUILD_ON_USE=0`` turns it off (a miss
raises CacheMiss naming :data:`SETUP_ALL`, as before).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from conformance_lab.toolchain import cache, gobuild, gomodules, versions
from conformance_lab.toolchain.cache import CacheMiss
from conformance_lab.toolchain.steps import SetupError

ENV = "DRA_CONFORMANCE_BUILD_ON_USE"
# rough cold build minutes on a quiet 2-core machine (issue 26: ~80 s per Go tool; the registry is larger)
MINUTES = {"registry": 3, "dranet": 3, "helm": 2, "kind": 2, "kwok": 2}
# the fix a first-use error names: the CLI for a pip-wheel install (no Makefile), make for a repository checkout
SETUP_ALL = "`dra-conformance setup --all` (`make setup-all` in a checkout)"


def enabled() -> bool:
    """False when ``$DRA_CONFORMANCE_BUILD_ON_USE`` is ``0`` (or ``false``/``no``)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no")


def _log() -> Path:
    logs = cache.root() / "logs"
    logs.mkdir(exist_ok=True)
    return logs / f"first-use-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _fix(tool, retry: str) -> str:
    """The fix a first-use error names: ``retry`` (e.g. "re-run"), and :data:`SETUP_ALL` unless the tool is
    ``on_use_only`` (setup leaves it out: it is built on first use only)."""
    if tool.on_use_only:
        return f"{retry} (it is built on first use only: `setup --all` leaves it out)"
    return f"{retry}, or run {SETUP_ALL}"


def build(name: str, out=None) -> Path:
    """Build pinned Go tool ``name`` (versions.toml ``[go.<name>]`` or ``[kind.go.<name>]``) unless cached,
    printing a progress line and the time taken to ``out`` (stderr); return its bin dir.

    Raises CacheMiss naming the tool, the log and :data:`SETUP_ALL` when the build fails or first-use builds are
    off (``$DRA_CONFORMANCE_BUILD_ON_USE=0``); KeyError for a name versions.toml does not pin."""
    pins = versions.load()
    tool = pins.go_tools.get(name) or pins.kind_tools.get(name)
    if tool is None:
        raise KeyError(f"no Go tool {name!r} in versions.toml; pinned: {', '.join(sorted(pins.go_tools))}")
    entry = cache.tool_entry(tool.name, tool.version)
    if gobuild.is_built(tool):
        return entry / "bin"
    if not enabled():
        raise CacheMiss(f"{name} {tool.version} is not built and {ENV}=0; {_fix(tool, f'unset {ENV} and re-run')}")
    out = out or sys.stderr
    with cache.locked(entry):  # another process building it: wait, then find it cached
        if gobuild.is_built(tool):
            return entry / "bin"
        minutes = tool.build_minutes or MINUTES.get(name, 2)
        ahead = "it is left to first use" if tool.on_use_only else f"{SETUP_ALL} builds everything ahead"
        print(f"building {name} {tool.version} (first use, up to ~{minutes} min; {ahead})...", file=out, flush=True)
        start, log = time.monotonic(), _log()
        try:
            path = gobuild.build_tool(tool, log)
        except SetupError as exc:
            raise CacheMiss(
                f"{name} {tool.version} could not be built on first use: {exc} (log: {log}); {_fix(tool, 're-run')}"
            ) from exc
        print(f"built {name} {tool.version} in {time.monotonic() - start:.0f} s", file=out, flush=True)
        return path


def tool_binary(name: str, binary: str | None = None, out=None) -> Path:
    """Path of binary ``binary`` (default: the first) of pinned Go tool ``name``, built on first use.
    Raises CacheMiss (unknown tool, build failed, first-use builds off)."""
    try:
        return cache.tool_binary(name, binary)
    except CacheMiss:
        try:
            build(name, out)
        except KeyError as exc:
            raise CacheMiss(str(exc)) from None
    return cache.tool_binary(name, binary)


def module_path(tool: str, inside: str = "", out=None) -> Path:
    """:func:`gomodules.module_path` (a pinned tool's source tree, e.g. a driver's chart) that builds the tool
    on a miss, which downloads its module. Raises KeyError for an unknown tool, CacheMiss when still absent."""
    try:
        return gomodules.module_path(tool, inside)
    except CacheMiss:
        if not enabled():
            raise
        if gobuild.is_built(versions.load().go_tools[tool]):
            gobuild.prepare_tool(versions.load().go_tools[tool], _log())  # built, but its modules were pruned
        else:
            build(tool, out)
    return gomodules.module_path(tool, inside)
