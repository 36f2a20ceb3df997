"""The pinned toolchain versions, read from the repository's single `versions.toml`.

Shapes: :class:`Versions` holds Kubernetes releases (minor -> exact tag), Go tools, the npm Allure pin,
Debian packages and Python pins. Errors: :class:`VersionError` names the bad key and the accepted form.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

from conformance import shipped
from conformance.reporting import allure_cli

REPO_ROOT = shipped.SOURCE_ROOT  # the checkout (suite image sources); site-packages when installed
VERSIONS_FILE = Path(__file__).resolve().parents[1] / "versions.toml"

_TAG = re.compile(r"^v1\.(\d+)\.(\d+)(-[0-9A-Za-z.]+)?$")


class VersionError(ValueError):
    """A requested or pinned version is malformed or unknown."""


@dataclasses.dataclass(frozen=True)
class GoTool:
    """A Go program built from the module proxy through a wrapper module.

    name: key in versions.toml; module/version: what the wrapper requires; packages: main packages to
    build; binaries: names of the outputs, in the order of packages; tags/ldflags: build settings
    (``{version}`` in ldflags is replaced by the version); nosumdb: the module has no entry in the checksum
    database (sum.golang.org), so its fetch runs with ``GONOSUMDB=<module>`` (that build only, never global);
    on_use_only: built only on first use, never by `make setup-all` (a long lane's extras, e.g. old releases).
    build_minutes: rough cold build minutes on a quiet 2-core machine, for the first-use progress line (0: the
    default of :mod:`conformance_lab.toolchain.firstuse`); not part of the build fingerprint.
    """

    name: str
    module: str
    version: str
    packages: tuple[str, ...]
    binaries: tuple[str, ...]
    extra_modules: tuple[str, ...] = ()
    tags: str = ""
    ldflags: str = ""
    replaces: tuple[tuple[str, str], ...] = ()
    nosumdb: bool = False
    on_use_only: bool = False
    build_minutes: int = 0


@dataclasses.dataclass(frozen=True)
class Versions:
    """Everything pinned in versions.toml."""

    k8s_default: str
    k8s_releases: dict[str, str]
    go_tools: dict[str, GoTool]
    allure: str
    debian_packages: tuple[str, ...]
    python: dict[str, str]
    images: dict = dataclasses.field(default_factory=dict)
    kind: dict = dataclasses.field(default_factory=dict)  # [kind]: nerdctl pin, node image inputs
    kind_tools: dict[str, GoTool] = dataclasses.field(default_factory=dict)  # [kind.go.*]: node image programs
    ci: dict = dataclasses.field(default_factory=dict)  # [ci]: npm pins of the CI-template runners
    ci_tools: dict[str, GoTool] = dataclasses.field(default_factory=dict)  # [ci.go.*]: act, actionlint
    # [kubernetes.staging_fallbacks]: tag -> {staging module: version} built instead of the tag's v0.x.y
    k8s_staging_fallbacks: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)

    def k8s_tag(self, requested: str | None = None) -> str:
        """Map ``1.35``, ``v1.35``, ``1.35.4`` or ``v1.35.4`` to the exact pinned tag (``v1.35.4``).

        Raises VersionError naming the accepted versions when the minor is not pinned.
        """
        req = (requested or self.k8s_default).strip()
        req = req[1:] if req.startswith("v") else req
        parts = req.split(".")
        if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
            raise VersionError(
                f"K8S_VERSION={requested!r} is not a Kubernetes version; use a minor such as "
                f"{', '.join(sorted(self.k8s_releases))}"
            )
        minor = ".".join(parts[:2])
        if minor not in self.k8s_releases:
            raise VersionError(
                f"Kubernetes {minor} is not pinned in {VERSIONS_FILE.name}; pinned: "
                f"{', '.join(sorted(self.k8s_releases))} (add a line under [kubernetes.releases])"
            )
        tag = self.k8s_releases[minor]
        if len(parts) > 2 and f"v{req}" != tag:
            raise VersionError(
                f"K8S_VERSION={requested!r}: only {tag} is pinned for {minor}; "
                f"use K8S_VERSION={minor} or change versions.toml"
            )
        return tag


def staging_version(k8s_tag: str) -> str:
    """Staging modules are tagged v0.<minor>.<patch> for Kubernetes v1.<minor>.<patch> (v1.34.4 -> v0.34.4)."""
    if not _TAG.match(k8s_tag):
        raise VersionError(f"{k8s_tag!r} is not a Kubernetes tag like v1.34.4")
    return "v0." + k8s_tag[len("v1.") :]


def _staging_fallbacks(table: dict, releases: dict[str, str]) -> dict[str, dict[str, str]]:
    """``[kubernetes.staging_fallbacks]``: for a pinned tag, staging modules built at an earlier patch of the same
    minor because the Go module proxy does not serve them at the tag's own version. Raises VersionError for a tag
    that is not pinned or a version that is not an earlier v0.<minor>.<patch>."""
    out = {}
    for tag, modules in table.items():
        if tag not in releases.values():
            raise VersionError(f"[kubernetes.staging_fallbacks] {tag}: not a pinned tag ({sorted(releases.values())})")
        own = staging_version(tag)
        prefix = own.rsplit(".", 1)[0] + "."
        for module, version in modules.items():
            patch = version[len(prefix) :]
            if not (version.startswith(prefix) and patch.isdigit() and int(patch) < int(own.rsplit(".", 1)[1])):
                raise VersionError(
                    f"[kubernetes.staging_fallbacks] {tag} {module} = {version!r}: not an earlier {prefix}<patch>"
                )
        out[tag] = dict(modules)
    return out


def _go_tool(table: str, name: str, spec: dict) -> GoTool:
    """One ``[go.<name>]``-shaped table as a GoTool; raises VersionError (KeyError for a missing key)."""
    tool = GoTool(
        name=name,
        module=spec["module"],
        version=spec["version"],
        packages=tuple(spec["packages"]),
        binaries=tuple(spec["binaries"]),
        extra_modules=tuple(spec.get("extra_modules", ())),
        tags=spec.get("tags", ""),
        ldflags=spec.get("ldflags", "").replace("{version}", spec["version"]),
        nosumdb=bool(spec.get("nosumdb", False)),
        on_use_only=bool(spec.get("on_use_only", False)),
        build_minutes=int(spec.get("build_minutes", 0)),
    )
    if len(tool.packages) != len(tool.binaries):
        raise VersionError(f"[{table}] needs one binary name per package")
    return tool


def load(path: Path = VERSIONS_FILE) -> Versions:
    """Parse versions.toml. Raises VersionError naming the missing or malformed key."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise VersionError(f"cannot read {path}: {exc}") from exc
    try:
        k8s = data["kubernetes"]
        releases = dict(k8s["releases"])
        for minor, tag in releases.items():
            staging_version(tag)
            if not tag.startswith(f"v{minor}."):
                raise VersionError(f"[kubernetes.releases] {minor} = {tag!r}: tag is not a {minor} patch")
        tools = {name: _go_tool(f"go.{name}", name, spec) for name, spec in data["go"].items()}
        kind = {k: val for k, val in data.get("kind", {}).items() if k != "go"}
        kind_tools = {
            name: _go_tool(f"kind.go.{name}", name, spec) for name, spec in data.get("kind", {}).get("go", {}).items()
        }
        return Versions(
            k8s_default=k8s["default"],
            k8s_releases=releases,
            go_tools=tools,
            allure=allure_cli.pinned_version(),
            debian_packages=tuple(data["debian"]["packages"]),
            python=dict(data["python"]),
            images=dict(data.get("images", {})),
            kind=kind,
            kind_tools=kind_tools,
            ci={k: val for k, val in data.get("ci", {}).items() if k != "go"},
            ci_tools={
                name: _go_tool(f"ci.go.{name}", name, spec) for name, spec in data.get("ci", {}).get("go", {}).items()
            },
            k8s_staging_fallbacks=_staging_fallbacks(k8s.get("staging_fallbacks", {}), releases),
        )
    except KeyError as exc:
        raise VersionError(f"{path.name}: missing key {exc}") from exc


def as_json(v: Versions) -> dict:
    """Every pin as one JSON-able object (``versions -o json``): ``{kubernetes: {default, releases: {minor: tag}},
    go: {name: module@version}, npm: {allure}, python: {package: version}, debian: [package]}``."""
    return {
        "kubernetes": {"default": v.k8s_default, "releases": dict(sorted(v.k8s_releases.items()))},
        "go": {t.name: f"{t.module}@{t.version}" for t in v.go_tools.values()},
        "npm": {"allure": v.allure},
        "python": dict(v.python),
        "debian": list(v.debian_packages),
    }


def describe(v: Versions) -> list[str]:
    """Human lines listing every pin (what `make versions` prints)."""
    lines = [f"kubernetes (default {v.k8s_default}):"]
    lines += [f"  {minor:<6} {tag}" for minor, tag in sorted(v.k8s_releases.items())]
    lines.append("go tools (built from the Go module proxy):")
    lines += [f"  {t.name:<19} {t.module}@{t.version}" for t in v.go_tools.values()]
    lines.append(f"npm:\n  allure       {v.allure}")
    lines.append("python:")
    lines += [f"  {k:<14} {val}" for k, val in v.python.items()]
    lines.append("debian: " + " ".join(v.debian_packages))
    return lines
