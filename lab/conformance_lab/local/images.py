"""The local cluster's side of offline images: which names its nodes use and loading archives into every
node's containerd. Building and verifying archives is ``conformance_lab.toolchain.images`` (one writer).
"""

from __future__ import annotations

from pathlib import Path

from conformance_lab.local.config import LocalClusterConfig, layout_for
from conformance_lab.local.node_config import node_paths
from conformance_lab.local.state import ClusterState, existing_clusters
from conformance_lab.toolchain.images.base import busybox_archive, pause_archive
from conformance_lab.toolchain.images.catalog import DEFAULT_IMAGES
from conformance_lab.toolchain.images.ctr import image_names, import_image
from conformance_lab.toolchain.images.oci import ImageError

__all__ = ["DEFAULT_IMAGES", "ImageError", "busybox_archive", "import_image", "pause_archive"]


def node_targets(name: str | None) -> tuple[str, Path, list[tuple[str, Path]]]:
    """``(cluster name, ctr binary, [(node name, containerd socket)])`` of a running local cluster; ``name``
    None picks the only one. Raises ImageError naming the clusters that exist and the fix."""
    if name is None:
        found = existing_clusters()
        if len(found) != 1:
            raise ImageError(
                f"{'no local cluster is running' if not found else f'several local clusters: {found}'}; "
                "start one with `dra-conformance cluster up` or name it with --cluster"
            )
        name = found[0]
    try:
        state = ClusterState.load(name)
    except FileNotFoundError as exc:
        raise ImageError(f"{exc}; existing local clusters: {existing_clusters() or 'none'}") from exc
    lay = layout_for(LocalClusterConfig(name=state.name, nodes=state.nodes, slot=state.slot))
    ctr = Path(state.binaries.get("ctr", ""))
    if not ctr.is_file():
        raise ImageError(f"cluster {name} records no ctr binary; run `make setup` and restart the cluster")
    return name, ctr, [(np.name, np.containerd_socket) for np in (node_paths(lay, i) for i in range(state.nodes))]


def import_into_nodes(name: str | None, archives: list[Path], say=print) -> list[str]:
    """Import every archive into every node of the local cluster ``name``; returns the node names. Each
    node's containerd must then list each image (checked with ``ctr images ls``). Raises ImageError."""
    cluster, ctr, nodes = node_targets(name)
    for node, socket in nodes:
        for archive in archives:
            import_image(ctr, socket, archive)
        say(f"{cluster}/{node}: imported {len(archives)} archive(s) into {socket}")
    return [node for node, _ in nodes]


def images_on(ctr: Path, socket: Path) -> set[str]:
    """Image names on one node's containerd (``k8s.io`` namespace)."""
    return image_names(ctr, socket)
