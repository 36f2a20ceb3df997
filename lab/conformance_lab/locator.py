"""The lab's locator (conformance.toolbox): programs, Go module trees and offline images from the lab's cache,
registered under the plugin's ``dra_conformance.locators`` entry point group. It answers None for what the
lab has not built, so the plugin falls back to ``$DRA_CONFORMANCE_<NAME>`` and ``PATH``."""

from __future__ import annotations

from pathlib import Path

from conformance_lab.toolchain import cache, firstuse, versions


class LabLocator:
    """Looks programs up in the lab's per-version cache (``make setup`` / ``make setup-all`` fill it; what is
    missing is built on first use, :mod:`conformance_lab.toolchain.firstuse`)."""

    def program(self, name: str, *, tool: str | None = None, k8s_version: str | None = None) -> Path | None:
        """A cached Kubernetes binary (``k8s_version`` given), or the binary ``name`` of pinned Go tool
        ``tool`` (default: ``name``), built on first use when `make setup` left it out (a progress line on
        stderr); None when not pinned, not built or its build failed (the plugin then names the fix)."""
        try:
            if k8s_version:
                return cache.k8s_binary(name, k8s_version)
            pinned = versions.load().go_tools
            if (tool or name) not in pinned:
                return None
            return firstuse.tool_binary(tool or name, name if tool and tool != name else None)
        except cache.CacheMiss:
            return None

    def go_module_dir(self, tool: str, inside: str = "") -> Path | None:
        """``<GOMODCACHE>/<module>@<version>/<inside>`` of the pinned Go tool (downloaded and built on first
        use); None when absent."""
        try:
            return firstuse.module_path(tool, inside)
        except (KeyError, cache.CacheMiss):
            return None

    def k8s_versions(self) -> tuple[str, ...]:
        """The Kubernetes minors pinned in the lab's versions.toml."""
        return tuple(versions.load().k8s_releases)

    def version_of(self, tool: str) -> str | None:
        """``module@version`` of a pinned Go tool."""
        t = versions.load().go_tools.get(tool)
        return f"{t.module}@{t.version}" if t else None

    def build_images(self, names: list[str], local_images: dict[str, str]) -> list[tuple[Path, str]]:
        """Build (cached) the named catalog images; ``[(archive, reference)]``. Raises ImageError on an
        unknown name or a failed build."""
        from conformance_lab.toolchain.images import catalog  # noqa: PLC0415 - image builders on demand

        return [(spec.build(), spec.ref()) for spec in catalog.select(names, local_images)]


LOCATOR = LabLocator()
