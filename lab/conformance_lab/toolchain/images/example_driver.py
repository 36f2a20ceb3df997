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

from conformance import images as refs
from conformance_lab.toolchain import firstuse, versions
from conformance_lab.toolchain.cache import CacheMiss
from conformance_lab.toolchain.images import store
from conformance_lab.toolchain.images.base import account_files, base_dirs
from conformance_lab.toolchain.images.oci import ImageConfig, ImageError, entries_layer, sha256_file, write_image

TOOL = "dra-example-driver"
PREVIOUS = "dra-example-driver-previous"  # the release before TOOL (the upgrade lane's N-1), same layout
HISTORY_PREFIX = "dra-example-driver-v"  # older releases, [go."dra-example-driver-v0.2.1"]: same layout
CHART = "deployments/helm/dra-example-driver"


def module_dir(tool: str = TOOL) -> Path:
    """The pinned dra-example-driver module (versions.toml ``[go.<tool>]``) in the Go module cache
    (``$(go env GOMODCACHE)``). Raises ImageError naming `make setup` when it is absent."""
    try:
        return firstuse.module_path(tool, CHART).parents[2]
    except CacheMiss as exc:
        raise ImageError(str(exc)) from None


def history_tools() -> list[str]:
    """The older releases pinned in versions.toml (``[go."dra-example-driver-vX.Y.Z"]``, the history of
    `make example-driver-history`), oldest first."""
    named = [n for n in versions.load().go_tools if n.startswith(HISTORY_PREFIX)]
    return sorted(named, key=lambda n: tuple(int(p) for p in n.removeprefix(HISTORY_PREFIX).split(".")))


def ref(tool: str = TOOL) -> str:
    """The image name the chart runs, normalized (``registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0``)."""
    return refs.normalize(refs.chart_image(module_dir(tool) / CHART))


def binaries(tool: str = TOOL) -> list[Path]:
    """The built binaries of the pinned version (built on first use). Raises CacheMiss naming `make setup-all`."""
    return [firstuse.tool_binary(tool, name) for name in versions.load().go_tools[tool].binaries]


def key(tool: str = TOOL) -> str:
    """Cache key: the image name, the binaries' digests and the pinned version."""
    pinned = versions.load().go_tools[tool]
    return store.cache_key(tool, pinned.version, ref(tool), [(p.name, sha256_file(p)) for p in binaries(tool)])


def archive(tool: str = TOOL) -> Path:
    """The cached, verified OCI archive of ``tool`` (TOOL or PREVIOUS; built on a miss: a few seconds).
    Raises ImageError/CacheMiss."""
    name, pinned = ref(tool), versions.load().go_tools[tool]

    def build(tmp: Path) -> None:
        entries = [*base_dirs(), *account_files(), ("usr", "dir", None, 0o755), ("usr/bin", "dir", None, 0o755)]
        entries += [(f"usr/bin/{p.name}", "file", p.read_bytes(), 0o755) for p in binaries(tool)]
        layer = tmp.with_name(tmp.name + ".layer")
        try:
            entries_layer(layer, entries)
            labels = (
                ("org.opencontainers.image.source", pinned.module),
                ("org.opencontainers.image.version", pinned.version),
            )
            config = ImageConfig(cmd=("dra-example-kubeletplugin",), labels=labels)
            write_image(tmp, name, [layer], config)
        finally:
            layer.unlink(missing_ok=True)

    return store.cached_archive(tool, key(tool), build)
