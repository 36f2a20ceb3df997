"""Images a DaemonSet deploy needs, imported into every node first when the cluster takes OCI archives
(core.handles.LoadsImages: the local cluster); profile key ``images`` (names of ``dra-conformance images
cache``). Shared by the ``helm`` and ``manifests`` deployers."""

from __future__ import annotations

from collections.abc import Iterable

from conformance import toolbox
from conformance.core import errors
from conformance.core.handles import ClusterHandle, LoadsImages
from conformance.images import ImageError


def load(cluster: ClusterHandle, names: Iterable[str]) -> list[str]:
    """Build (cached, by a locator: conformance.toolbox.build_images) and import the named images into every
    node when ``cluster`` takes archives; returns
    their references (none for a cluster with a registry of its own: the manifests' pull policy applies).
    Raises ConfigError (field ``deploy.images``) for an unknown name or a failed build."""
    names = [str(n) for n in names]
    if not names or not isinstance(cluster, LoadsImages):
        return []
    try:
        built = toolbox.build_images(names, dict(cluster.images))
        cluster.load_images([archive for archive, _ in built])
    except (ImageError, toolbox.ToolMissing) as exc:
        raise errors.ConfigError(str(exc), field="deploy.images", fix="see `dra-conformance images cache`") from None
    return [ref for _, ref in built]
