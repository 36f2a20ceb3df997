"""The dra-driver-cpu image, from the ``dracpu`` binary built from its Go module (versions.toml
``[go.dra-driver-cpu]``, built on first use), named as its own Helm chart runs it.

Facts from upstream (github.com/kubernetes-sigs/dra-driver-cpu v0.2.0, read from the Go module): the
``Dockerfile`` builds ``/dracpu`` with ``CGO_ENABLED=0`` onto distroless/base-debian12; the chart
(``deployment/helm/dra-driver-cpu``) runs ``args: [/dracpu, ...]`` in ``image.repository:image.tag`` (tag default:
``appVersion``). The static binary needs no base image beyond the directories and accounts every image here has.
Like upstream's ``CMD ["/dracpu"]`` the image has no entrypoint: the chart's ``args`` start with ``/dracpu``, so an
entrypoint would make that path the first argument and Go's flag parsing would stop there (every chart flag
ignored, ``--hostname-override`` included; seen in session 12).
"""

from __future__ import annotations

from pathlib import Path

from conformance import images as refs
from conformance_lab.toolchain import cache, gomodules, versions
from conformance_lab.toolchain.cache import CacheMiss
from conformance_lab.toolchain.images import store
from conformance_lab.toolchain.images.base import account_files, base_dirs
from conformance_lab.toolchain.images.oci import ImageConfig, ImageError, entries_layer, sha256_file, write_image

TOOL = "dra-driver-cpu"
CHART = "deployment/helm/dra-driver-cpu"
CONFIG_REVISION = 2  # bumped when the image config changes: part of the cache key (1: entrypoint /dracpu)


def ref() -> str:
    """The image name the chart runs (``us-central1-docker.pkg.dev/.../dra-driver-cpu:v0.2.0``). Raises ImageError
    naming the missing module when it is not in the Go module cache."""
    try:
        return refs.normalize(refs.chart_image(gomodules.module_path(TOOL, CHART)))
    except CacheMiss as exc:
        raise ImageError(str(exc)) from None


def binary() -> Path:
    """The built ``dracpu``. Raises CacheMiss naming `make setup`."""
    return cache.tool_binary(TOOL, "dracpu")


def key() -> str:
    """Cache key: the image name, the binary's digest, the pinned version and the config revision."""
    return store.cache_key(TOOL, versions.load().go_tools[TOOL].version, ref(), sha256_file(binary()), CONFIG_REVISION)


def archive() -> Path:
    """The cached, verified OCI archive (built on a miss: a few seconds). Raises ImageError/CacheMiss."""
    name, pinned = ref(), versions.load().go_tools[TOOL]

    def build(tmp: Path) -> None:
        entries = [*base_dirs(), *account_files(), ("dracpu", "file", binary().read_bytes(), 0o755)]
        layer = tmp.with_name(tmp.name + ".layer")
        try:
            entries_layer(layer, entries)
            labels = (
                ("org.opencontainers.image.source", pinned.module),
                ("org.opencontainers.image.version", pinned.version),
            )
            write_image(tmp, name, [layer], ImageConfig(cmd=("/dracpu",), labels=labels))
        finally:
            layer.unlink(missing_ok=True)

    return store.cached_archive(TOOL, key(), build)
