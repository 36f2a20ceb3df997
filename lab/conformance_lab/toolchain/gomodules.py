"""Source trees of the pinned Go tools (versions.toml ``[go.<name>]``) in the Go module cache, which `make
setup` fills while building them: e.g. a driver's Helm chart shipped inside its module
(``sigs.k8s.io/dra-example-driver@v0.4.0/deployments/helm/dra-example-driver``). Read in place, never copied.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conformance_lab.toolchain import versions
from conformance_lab.toolchain.cache import CacheMiss


def modcache() -> Path:
    """``$(go env GOMODCACHE)``. Raises CacheMiss when Go cannot say."""
    try:
        out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CacheMiss(f"`go env GOMODCACHE` failed ({exc}); install Go and run `make setup`") from None
    return Path(out.stdout.strip())


def module_path(tool: str, inside: str = "") -> Path:
    """``<GOMODCACHE>/<module>@<version>/<inside>`` of the pinned Go tool ``tool``. Raises KeyError naming the
    pinned tools for an unknown one, CacheMiss (naming `make setup`) when the path is absent."""
    tools = versions.load().go_tools
    if tool not in tools:
        raise KeyError(f"no Go tool {tool!r} in versions.toml; pinned: {', '.join(sorted(tools))}")
    t = tools[tool]
    path = modcache() / f"{t.module}@{t.version}" / inside
    if not path.exists():
        raise CacheMiss(f"{t.module}@{t.version}/{inside} is not in the Go module cache ({path}); run `make setup`")
    return path
