"""The dra-example-driver image, from the binaries `make setup` built from its Go module, named as its own
Helm chart runs it.

Facts from upstream (kubernetes-sigs/dra-example-driver at the pinned version, read from the Go module):
``deployments/container/Dockerfile`` copies ``dra-example-kubeletplugin``, ``dra-example-controller`` and
``dra-example-webhook`` to ``/usr/bin`` and sets no entrypoint; the chart
(``deployments/helm/dra-example-driver``) runs ``command: ["dra-example-kubeletplugin"]`` in
``image.repository:image.tag`` (tag default: ``appVersion``). Our image holds the binaries the toolchain
builds (versions.toml ``[go.dra-example-driver]``: the kubelet plugin; the controller and webhook, which the
chart starts only when ``controller.plugins`` or ``webhook.enabled`` is set, when they are listed there too).
"""

from __future__ import annotations

from pathlib import Path

from .. import cache, gomodules, versions
from ..cache import CacheMiss
from . import refs, store
from .base import account_files, base_dirs
from .oci import ImageConfig, ImageError, entries_layer, sha256_file, write_image

TOOL = "dra-example-driver"
CHART = "deployments/helm/dra-example-driver"


def module_dir() -> Path:
    """The pinned dra-example-driver module in the Go module cache (``$(go env GOMODCACHE)``). Raises
    ImageError naming `make setup` when it is absent."""
    try:
        return gomodules.module_path(TOOL, CHART).parents[2]
    except CacheMiss as exc:
        raise ImageError(str(exc)) from None


def ref() -> str:
    """The image name the chart runs, normalized (``registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0``)."""
    return refs.normalize(refs.chart_image(module_dir() / CHART))


def binaries() -> list[Path]:
    """The built binaries of the pinned version. Raises CacheMiss naming `make setup`."""
    tool = versions.load().go_tools[TOOL]
    return [cache.tool_binary(TOOL, name) for name in tool.binaries]


def key() -> str:
    """Cache key: the image name, the binaries' digests and the pinned version."""
    tool = versions.load().go_tools[TOOL]
    return store.cache_key(TOOL, tool.version, ref(), [(p.name, sha256_file(p)) for p in binaries()])


def archive() -> Path:
    """The cached, verified OCI archive (built on a miss: a few seconds). Raises ImageError/CacheMiss."""
    name, tool = ref(), versions.load().go_tools[TOOL]

    def build(tmp: Path) -> None:
        entries = [*base_dirs(), *account_files(), ("usr", "dir", None, 0o755), ("usr/bin", "dir", None, 0o755)]
        entries += [(f"usr/bin/{p.name}", "file", p.read_bytes(), 0o755) for p in binaries()]
        layer = tmp.with_name(tmp.name + ".layer")
        try:
            entries_layer(layer, entries)
            labels = (
                ("org.opencontainers.image.source", tool.module),
                ("org.opencontainers.image.version", tool.version),
            )
            config = ImageConfig(cmd=("dra-example-kubeletplugin",), labels=labels)
            write_image(tmp, name, [layer], config)
        finally:
            layer.unlink(missing_ok=True)

    return store.cached_archive(TOOL, key(), build)
