"""The ``kind`` cluster provider: a kind cluster per run, created with the kind CLI (``[go.kind]``).

With a Docker engine that runs privileged containers, kind's own provider and the official node image
``kindest/node:<tag>`` are used. Otherwise (this project's development machine: Docker's ``--privileged``
fails without CAP_SYS_RESOURCE) ``KIND_EXPERIMENTAL_PROVIDER=nerdctl`` over our own containerd
(:mod:`.kindhost`) and the node image built offline by ``dra-conformance kind build-node-image``.
Source: shared/reference/kind-offline.md; kind config API ``kind.x-k8s.io/v1alpha4`` (featureGates,
runtimeConfig, containerdConfigPatches, kubeadmConfigPatches, nodes).

The cluster config sets the run's DRA feature gates and ``resource.k8s.io`` runtime-config (the same choice as
``--cluster local``), CDI in containerd, ``failCgroupV1: false`` on cgroup v1 hosts, one control plane and
``--nodes`` workers. ``--kind-name NAME`` reuses a running cluster of that name (and leaves it running);
otherwise ``down()`` deletes the cluster (unless ``--keep-cluster``) and undoes the host side effects.
Images (busybox, pause, the driver's) go in with ``kind load image-archive``, or, with a registry ``mirror``
(``KindProvider(ctx, mirror="127.0.0.1:PORT")``, or ``run --cluster kind --image-registry 127.0.0.1:PORT``), nothing
is loaded and the nodes pull through the lab's loopback
registry (:mod:`conformance_lab.kind.mirror`); node access is
``nerdctl``/``docker exec`` into the node containers (:class:`conformance_lab.kind.node_access.KindNodeAccess`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance.core import errors
from conformance.core.handles import NodeAccess, ProviderContext
from conformance_lab.kind import host as kindhost
from conformance_lab.kind import mirror as kindmirror
from conformance_lab.kind.node_access import KindNodeAccess
from conformance_lab.local import gates as gatelib
from conformance_lab.local import hostlimits
from conformance_lab.local.cluster import known_gates_cached
from conformance_lab.toolchain import cache, firstuse

OFFICIAL_IMAGE = "kindest/node:{tag}"


def docker_available() -> tuple[bool, str]:
    """``(available, why)``: whether Docker answers ``docker info`` and runs a privileged container."""
    docker = shutil.which("docker")
    if not docker:
        return False, "the docker CLI is not installed"
    try:
        proc = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"docker info failed: {exc}"
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or ["docker info failed"])[-1]


def kind_config(name: str, tag: str, gate_mode: str, workers: int) -> tuple[dict, dict[str, bool], str]:
    """The kind Cluster config for the run, its feature gates and runtime-config string."""
    gates = gatelib.select(gate_mode, known_gates_cached(str(cache.k8s_binary("kube-apiserver", tag)), tag))
    runtime = gatelib.runtime_config(gate_mode, tag, gates)
    config: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": name,
        "containerdConfigPatches": ['[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n'],
        "nodes": [{"role": "control-plane"}] + [{"role": "worker"} for _ in range(workers)],
    }
    if gates:
        config["featureGates"] = gates
    if runtime:
        config["runtimeConfig"] = dict(part.split("=", 1) for part in runtime.split(","))
    if not Path("/sys/fs/cgroup/cgroup.controllers").exists():  # cgroup v1 host: kubelet must not refuse it
        config["kubeadmConfigPatches"] = ["kind: KubeletConfiguration\nfailCgroupV1: false\n"]
    return config, gates, runtime


@dataclasses.dataclass(frozen=True)
class KindNode:
    """A kind worker node (the node name is its container's name)."""

    name: str


@dataclasses.dataclass
class KindCluster:
    """Handle of ``--cluster kind`` (ClusterHandle + LoadsImages). ``cli``: nerdctl or docker binary;
    ``env``: the environment kind and the CLI run with; ``created``: whether this run created the cluster."""

    name: str
    kubeconfig: Path
    k8s_version: str
    nodes: list[KindNode]
    feature_gates: dict[str, bool]
    runtime_config: str
    images: dict[str, str]
    cli: str
    created: bool

    def load_images(self, archives: list[Path]) -> list[str]:
        """``kind load image-archive`` each OCI archive into every node; returns the node names. Raises
        ClusterUnavailable naming the archive."""
        for archive in archives:
            _kind(["load", "image-archive", str(archive), "--name", self.name], f"loading {archive}", timeout=600)
        return [n.name for n in self.nodes]


@functools.cache
def use_docker() -> bool:
    """Whether kind uses Docker (a working engine) or nerdctl over our containerd. ``DRA_CONFORMANCE_KIND_PROVIDER``
    (``docker`` | ``nerdctl``) overrides the choice, e.g. where Docker runs but refuses privileged containers."""
    choice = os.environ.get("DRA_CONFORMANCE_KIND_PROVIDER", "")
    if choice not in ("", "docker", "nerdctl"):
        raise errors.ConfigError(
            f"{choice!r} is not a kind provider",
            source="DRA_CONFORMANCE_KIND_PROVIDER",
            fix="docker or nerdctl (or unset: Docker when `docker info` works)",
        )
    return choice == "docker" or (not choice and docker_available()[0])


def _env() -> dict[str, str] | None:
    return None if use_docker() else kindhost.KindRuntime(Path("/tmp")).env()


def _kind(args: list[str], what: str, timeout: float = 900, log: Path | None = None) -> str:
    try:
        binary = firstuse.tool_binary("kind")
    except cache.CacheMiss as exc:
        raise errors.ClusterUnavailable(str(exc)) from None
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, env=_env(), timeout=timeout)
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ kind {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise errors.ClusterUnavailable(f"kind {what} failed: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def delete(name: str, runtime: kindhost.KindRuntime) -> list[str]:
    """``kind delete cluster --name name``; stop its registry mirror's forwarder (:func:`kindmirror.stop`); with
    nerdctl, also stop our containerd when no cluster is left and undo the host side effects
    (:meth:`kindhost.KindRuntime.stop`). Returns what was undone."""
    try:
        _kind(["delete", "cluster", "--name", name], "delete cluster", timeout=300)
    except errors.ClusterUnavailable as exc:
        return [f"kind delete failed: {exc}"]
    return kindmirror.stop(name) + ([] if use_docker() else runtime.stop())


class KindProvider:
    """``--cluster kind`` (ClusterProvider Protocol of core/handles.py)."""

    def __init__(self, ctx: ProviderContext, mirror: str = "") -> None:
        self.ctx = ctx
        # 127.0.0.1:PORT of a registry the nodes pull through (nothing loaded), or "": the lab API's argument, else
        # the user's `run --cluster kind --image-registry 127.0.0.1:PORT`
        self.mirror = mirror or (getattr(ctx.cfg, "image_registry", None) or "")
        self._mirror_source = "kind registry mirror" if mirror else "--image-registry"
        self.handle: KindCluster | None = None
        self.runtime = kindhost.KindRuntime(ctx.report_dir)
        self.reused = False  # --kind-name named a running cluster: never deleted by this run
        self.started = False  # up() got past its checks (pre-flight, registry): down() has something to undo

    def _name(self) -> str:
        return getattr(self.ctx.cfg, "kind_name", None) or f"dra-{self.ctx.cfg.run_id[-8:]}".lower()

    def up(self) -> KindCluster:
        """Create (or reuse, ``--kind-name``) the cluster, load busybox and pause. Raises ClusterUnavailable
        after removing what it created."""
        from conformance_lab.toolchain import versions  # noqa: PLC0415

        tag = versions.load().k8s_tag(self.ctx.cfg.k8s_version)
        name, docker = self._name(), use_docker()
        self.ctx.report_dir.mkdir(parents=True, exist_ok=True)
        log = self.ctx.report_dir / "kind.log"
        config, gates, runtime = kind_config(name, tag, self.ctx.cfg.feature_gates, self.ctx.cfg.nodes)
        if self.mirror:  # before anything starts: a dead or empty registry is the user's input, named with its fix
            from conformance_lab.toolchain.images import catalog  # noqa: PLC0415

            needed = [s.ref() for s in catalog.select(["busybox", "pause"])]
            kindmirror.check_registry(self.mirror, needed, self._mirror_source)
        short, unseen = hostlimits.check_kind(self.ctx.cfg.nodes + 1)  # the control plane is a kind node too
        for line in unseen:
            self.ctx.progress(f"kind pre-flight: {line}")
        if short:
            lines = [*short, *unseen]
            raise errors.ClusterUnavailable("kind pre-flight failed:\n" + "\n".join(f"  - {p}" for p in lines))
        self.started = True
        try:
            cli = shutil.which("docker") or "docker"
            if not docker:
                (self.ctx.report_dir / "kind-host-before.json").write_text(json.dumps(kindhost.sysctls(), indent=1))
                self.runtime.start()
                cli = str(self.runtime.binaries()["nerdctl"])
            existing = name in _kind(["get", "clusters"], "get clusters").split()
            kubeconfig = self.ctx.report_dir / "kubeconfig"
            if existing and getattr(self.ctx.cfg, "kind_name", None):
                self.reused = True
                self.ctx.progress(f"kind: reusing cluster {name}")
                kubeconfig.write_text(_kind(["get", "kubeconfig", "--name", name], "get kubeconfig"))
            elif existing:
                self.reused = True  # not ours: down() must not delete it
                raise errors.ClusterUnavailable(f"a kind cluster named {name} exists already; pass --kind-name {name}")
            else:
                if self.mirror:
                    kindmirror.configure(config, name, self.mirror)
                image = OFFICIAL_IMAGE.format(tag=tag) if docker else self._node_image(tag)
                path = self.ctx.report_dir / "kind-config.yaml"
                path.write_text(yaml.safe_dump(config, sort_keys=False))
                start = time.monotonic()
                self.ctx.progress(f"kind: creating cluster {name} ({image}, {self.ctx.cfg.nodes} workers)")
                _kind(
                    [
                        "create",
                        "cluster",
                        "--name",
                        name,
                        "--config",
                        str(path),
                        "--image",
                        image,
                        "--kubeconfig",
                        str(kubeconfig),
                        "--wait",
                        "180s",
                    ],
                    "create cluster",
                    log=log,
                )
                self.ctx.progress(f"kind: cluster {name} up in {time.monotonic() - start:.0f} s")
            nodes = [
                n for n in _kind(["get", "nodes", "--name", name], "get nodes").split() if "control-plane" not in n
            ]
            from conformance_lab.toolchain.images import catalog  # noqa: PLC0415

            specs = catalog.select(["busybox", "pause"])
            self.handle = KindCluster(
                name,
                kubeconfig,
                tag,
                [KindNode(n) for n in sorted(nodes)],
                gates,
                runtime,
                {s.name: s.ref() for s in specs},
                cli,
                created=not existing,
            )
            self._pull_or_load(name, [s.build() for s in specs] if not self.mirror else [])
        except BaseException:
            self.down()
            raise
        return self.handle

    def _pull_or_load(self, name: str, archives: list[Path]) -> None:
        """``kind load`` ``archives``; with a mirror, load nothing and start the forwarder from every node's
        loopback (control plane included) to the registry."""
        assert self.handle is not None
        if not self.mirror:
            self.handle.load_images(archives)
            return
        if not self.handle.created:
            raise errors.ClusterUnavailable(f"kind cluster {name} exists: a registry mirror is set when it is created")
        env = None if Path(self.handle.cli).name == "docker" else self.runtime.env()
        all_nodes = _kind(["get", "nodes", "--name", name], "get nodes").split()
        pids = [kindmirror.node_pid(self.handle.cli, env, n) for n in all_nodes]
        kindmirror.start_forwarder(name, self.mirror, pids, self.ctx.report_dir / "kind-netfwd.log")
        self.ctx.progress(f"kind: nothing loaded, {len(pids)} node(s) pull through {self.mirror}")

    def _node_image(self, tag: str) -> str:
        """The offline node image for ``tag``, built or found cached, loaded into our containerd; its ref."""
        from conformance_lab.toolchain.images.oci import ImageError  # noqa: PLC0415
        from conformance_lab.toolchain.kindnode import build  # noqa: PLC0415
        from conformance_lab.toolchain.steps import SetupError  # noqa: PLC0415

        self.ctx.progress(f"kind: node image for {tag} (built offline, cached)")
        try:
            ref, archive = build.node_image(tag, self.ctx.report_dir / "kind-node-image.log")
        except (SetupError, ImageError) as exc:
            raise errors.ClusterUnavailable(f"{exc} (build it with `make kind-node-image`)") from exc
        self.runtime.load(archive, ref)
        return ref

    def down(self) -> None:
        """Delete the cluster this run created (not a reused one, not with --keep-cluster), stop our
        containerd and undo the host side effects (written to ``kind-host-cleanup.txt``)."""
        keep = self.ctx.cfg.keep_cluster or self.reused or (self.handle is not None and not self.handle.created)
        keep = keep or not self.started  # refused before anything started: no kind delete of a cluster never made
        if not keep:
            self.ctx.progress(f"kind: deleting cluster {self._name()}")
            removed = delete(self._name(), self.runtime)
            (self.ctx.report_dir / "kind-host-cleanup.txt").write_text("\n".join(removed) + "\n")
            (self.ctx.report_dir / "kind-host-after.json").write_text(json.dumps(kindhost.sysctls(), indent=1))

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None:
        """``nerdctl``/``docker exec`` into the worker containers (None for ``--node-access none``)."""
        if choice == "none" or self.handle is None:
            return None
        env = None if Path(self.handle.cli).name == "docker" else self.runtime.env()
        return KindNodeAccess([n.name for n in self.handle.nodes], cli=self.handle.cli, env=env)

    def state(self) -> dict:
        """The handle as JSON-able data for :meth:`attach`."""
        assert self.handle is not None, "state() before up()"
        return {**dataclasses.asdict(self.handle), "kubeconfig": str(self.handle.kubeconfig)}

    def attach(self, state: Mapping[str, Any]) -> KindCluster:
        """The handle of another process of the same run, from :meth:`state`."""
        data = dict(state)
        data["kubeconfig"] = Path(data["kubeconfig"])
        data["nodes"] = [KindNode(**n) for n in data["nodes"]]
        self.handle = KindCluster(**data)
        return self.handle
