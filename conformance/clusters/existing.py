"""The ``existing`` cluster provider: a cluster the harness did not create, reached through ``--kubeconfig``
(and ``--context``). ``down()`` removes nothing; node access only with the explicit
``--node-access privileged-pod`` opt-in (privileged helper pods, conformance/node/helper_pod.py).

Images: the offline images (``dra-conformance images``: busybox for probe and helper pods, the reference-driver
image as the helpers' gRPC relay) are used when every node lists them in ``Node.status.images`` (the kubelet
reports its runtime's images there), so an air-gapped cluster loaded with ``dra-conformance images import``
needs no registry; otherwise ``busybox:1.36`` from the nodes' registry, and no gRPC relay (the node checks that
need one are skipped with that evidence). With ``--image-registry HOST[:PORT][/PREFIX]`` both come from that
registry (where ``dra-conformance images push`` put them; conformance.images.in_registry) whatever the nodes list:
the nodes pull them, and a pull that fails is named in the helper pods' failure (image, node, reason).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance import images as refs
from conformance.core import errors
from conformance.core.config import gate_list
from conformance.core.handles import NodeAccess, ProviderContext
from conformance.core.objects import Obj
from conformance.k8s import discovery, kubeconfig
from conformance.k8s.client import K8s
from conformance.node.helper_pod import HelperPodNodeAccess

DEFAULT_IMAGES = {"busybox": "busybox:1.36"}
RBAC_DENIAL = re.compile(r'cannot [a-z]+ resource "')  # RBAC's 403: 'User "u" cannot create resource "jobs" ...'
RBAC_FIX = (
    "Grant the run's user that permission (`dra-conformance preflight --print-role --node-access privileged-pod` "
    "prints the ClusterRole a run needs)"
)
ADMISSION_FIX = "Allow privileged pods in the run's helper namespace (Pod Security admission, policy engines)"


def images_on_every_node(nodes: list[Obj]) -> set[str]:
    """Image references (normalized) that every node reports in ``status.images[].names`` (empty for none)."""
    per_node = [
        {
            refs.normalize(n)
            for image in node.get("status.images") or []
            for n in image.get("names") or []
            if "@" not in n
        }
        for node in nodes
    ]
    return set.intersection(*per_node) if per_node else set()


def pinned(nodes: list[Obj], ref: str) -> str:
    """``ref`` pinned by digest (``repo@sha256:...``) when every node reports the image of ``ref`` with one and
    the same digest name in ``status.images[].names`` (what the runtime records for a pulled image, or one
    imported with its digest); else ``ref`` unchanged. Source: core/v1 ContainerImage.names."""
    want, common = refs.normalize(ref), None
    for node in nodes:
        digests = {
            n
            for image in node.get("status.images") or []
            if want in {refs.normalize(x) for x in image.get("names") or [] if "@" not in x}
            for n in image.get("names") or []
            if "@sha256:" in n
        }
        common = digests if common is None else common & digests
    return next(iter(common)) if common and len(common) == 1 else ref


def choose_images(nodes: list[Obj], registry: str | None = None) -> dict[str, str]:
    """``{"busybox": ref, "grpc": ref or ""}``: with ``registry`` (``--image-registry``) both from there; else
    the offline images where every node has them (module docstring). Raises ImageError on a bad registry."""
    offline, relay = refs.normalize(refs.OFFLINE["busybox"]), refs.reference_driver_ref()  # relay: Python + grpcio
    if registry:
        return {"busybox": refs.in_registry(offline, registry), "grpc": refs.in_registry(relay, registry)}
    present = images_on_every_node(nodes)
    return {
        "busybox": refs.OFFLINE["busybox"] if offline in present else DEFAULT_IMAGES["busybox"],
        "grpc": relay if relay in present else "",
    }


@dataclasses.dataclass(frozen=True)
class ExistingNode:
    """A node of a cluster the harness did not create (no host paths)."""

    name: str


@dataclasses.dataclass
class ExistingCluster:
    """Handle of ``--cluster existing``: kubeconfig, version and node names from the API; ``feature_gates``:
    what ``--cluster-feature-gates`` states (the harness reads the real ones from metrics); runtime-config
    unknown (empty); ``images``: what test pods use (``busybox``) and the helper pods' gRPC relay
    (``grpc``, "" when absent), from :func:`choose_images`."""

    kubeconfig: Path
    k8s_version: str
    nodes: list[ExistingNode]
    feature_gates: dict[str, bool] = dataclasses.field(default_factory=dict)
    runtime_config: str = ""
    images: dict[str, str] = dataclasses.field(default_factory=lambda: dict(DEFAULT_IMAGES))
    gates_stated: bool = True  # feature_gates are the user's word, not measured (core.capabilities)


class ExistingProvider:
    """Connects to the cluster of ``--kubeconfig``/``--context`` (ClusterHandle Protocol of core/handles.py)."""

    def __init__(self, ctx: ProviderContext) -> None:
        self.ctx = ctx
        self.handle: ExistingCluster | None = None

    def _kubeconfig(self) -> kubeconfig.Kubeconfig:
        """``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``, with ``--context``: the one resolution
        the session, helm, kubectl and the helper pods share (conformance.k8s.kubeconfig)."""
        return kubeconfig.resolve(self.ctx.cfg.kubeconfig, self.ctx.cfg.context)

    def up(self) -> ExistingCluster:
        """Read version and nodes. Raises ClusterUnavailable naming the kubeconfig or the server. The handle's
        ``kubeconfig`` is the resolved path (an ``os.pathsep`` list when ``$KUBECONFIG`` lists several files)."""
        kube = self._kubeconfig()
        k8s = K8s.from_kubeconfig(kube)
        version = discovery.server_version(k8s)
        nodes = discovery.nodes(k8s)
        self.handle = ExistingCluster(
            Path(kube.path),
            version,
            [ExistingNode(n.name) for n in nodes],
            feature_gates=gate_list("--cluster-feature-gates", self.ctx.cfg.cluster_feature_gates),
            images=choose_images(nodes, self.ctx.cfg.image_registry),
        )
        return self.handle

    def down(self) -> None:
        """Nothing: the harness did not create this cluster."""

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None:
        """Privileged helper pods for ``privileged-pod`` (started by the owner; other processes of the run
        attach to them); None otherwise."""
        if choice != "privileged-pod" or self.handle is None:
            return None
        k8s = K8s.from_kubeconfig(self.handle.kubeconfig, self.ctx.cfg.context)
        image, grpc_image = (
            self.handle.images.get("busybox", DEFAULT_IMAGES["busybox"]),
            self.handle.images.get("grpc", ""),
        )
        access = HelperPodNodeAccess(k8s, [n.name for n in self.handle.nodes], self.ctx.cfg.run_id, image, grpc_image)
        if not owner:
            access.attach()
            return access
        ours = (
            image != DEFAULT_IMAGES["busybox"] or grpc_image
        )  # the offline images: pinned where nodes report a digest
        nodes = discovery.nodes(k8s) if ours else []
        if image != DEFAULT_IMAGES["busybox"]:
            access.image = pinned(nodes, image)
        if grpc_image:
            access.grpc_image = pinned(nodes, grpc_image)
        access.start()
        if access.failure:  # asked for explicitly: no silent fall-back to "no node checks" (all skipped)
            with contextlib.suppress(errors.ConformanceError):
                access.stop()
            raise errors.ClusterUnavailable(
                f"--node-access privileged-pod: the privileged helper pods did not start: {access.failure}. "
                + (RBAC_FIX if RBAC_DENIAL.search(access.failure) else ADMISSION_FIX)
                + ", or run with --node-access none (node checks then skip with that reason)"
            )
        return access

    def state(self) -> dict:
        """``{kubeconfig, k8s_version, nodes, images}`` for :meth:`attach`."""
        assert self.handle is not None, "state() before up()"
        return {
            "kubeconfig": str(self.handle.kubeconfig),
            "k8s_version": self.handle.k8s_version,
            "nodes": [n.name for n in self.handle.nodes],
            "images": dict(self.handle.images),
            "feature_gates": dict(self.handle.feature_gates),
        }

    def attach(self, state: Mapping[str, Any]) -> ExistingCluster:
        """The handle of another process of the same run, from :meth:`state`."""
        self.handle = ExistingCluster(
            Path(state["kubeconfig"]),
            str(state.get("k8s_version", "")),
            [ExistingNode(n) for n in state.get("nodes", [])],
            feature_gates=dict(state.get("feature_gates") or {}),
            images=dict(state.get("images") or DEFAULT_IMAGES),
        )
        return self.handle
