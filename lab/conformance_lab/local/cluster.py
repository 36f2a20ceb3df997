"""LocalCluster: the life cycle of a real Kubernetes cluster run as host processes (no Docker): its state, slot,
pre-flight, bring-up (the steps in bringup.py, local-cluster.md §3.7) and tear-down.
On any failure the partial cluster is torn down and ClusterUnavailable names the component with its log.
Ctrl-C/SIGTERM never cut a spawn from its record in the state, nor the tear-down (commands.signals_deferred).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

from conformance.core.commands import signals_deferred
from conformance.core.errors import ClusterUnavailable, ConfigError, WaitError
from conformance_lab.local import api as apilib
from conformance_lab.local import gates as gatelib
from conformance_lab.local import images, netdevs, node_config, node_mounts, preflight
from conformance_lab.local.bringup import BringUp
from conformance_lab.local.config import Layout, LocalClusterConfig, layout_for
from conformance_lab.local.handle import LocalClusterHandle
from conformance_lab.local.pki import Pki
from conformance_lab.local.state import ClusterState, SlotTaken, host_lock, slots_in_use
from conformance_lab.local.teardown import teardown
from conformance_lab.toolchain import cache, versions

Progress = Callable[[str], None]


def resolve_version(requested: str | None) -> str:
    """Exact pinned tag for ``requested``; raises ConfigError (field k8s_version) naming the pinned ones."""
    try:
        return versions.load().k8s_tag(requested)
    except versions.VersionError as exc:
        raise ConfigError(str(exc), field="k8s_version", fix="pick a pinned minor from versions.toml") from None


def known_gates_cached(apiserver: str, tag: str) -> dict[str, tuple[str, bool]]:
    """Gates of the built kube-apiserver, cached next to the binaries' cache as JSON."""
    path = cache.root() / "gates" / f"{tag}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("binary_size") == Path(apiserver).stat().st_size:
            return {k: (v[0], v[1]) for k, v in data["gates"].items()}
    except (OSError, ValueError, KeyError):
        pass
    gates = gatelib.binary_gates(Path(apiserver))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"binary_size": Path(apiserver).stat().st_size, "gates": gates}))
    return gates


class LocalCluster:
    """A local cluster described by ``config``. ``up()`` -> LocalClusterHandle; ``down()`` is idempotent."""

    def __init__(self, config: LocalClusterConfig, progress: Progress | None = None) -> None:
        self.config = config.validate()
        self.layout: Layout = layout_for(config)
        self.progress = progress or (lambda line: None)
        self.handle: LocalClusterHandle | None = None
        self._t0 = time.monotonic()

    # ---- public API -------------------------------------------------------------------------------
    @classmethod
    def load(cls, name: str) -> LocalCluster:
        """The cluster ``name`` from its on-disk state (for ``down``/``status`` from another process).
        Raises FileNotFoundError when no such cluster exists."""
        state = ClusterState.load(name)
        cfg = LocalClusterConfig(
            name=state.name,
            nodes=state.nodes,
            slot=state.slot,
            log_dir=Path(state.log_dir),
            feature_gates=state.feature_gate_mode or "defaults",
            kwok_nodes=len(state.kwok_nodes),
            k8s_version=state.k8s_version or None,
            daemonset_paths=bool(state.host.get("daemonset_paths")),
            nri=bool(state.host.get("nri")),
        )
        cluster = cls(cfg)
        if state.phase == "running":
            cluster.handle = cluster._make_handle(state)
        return cluster

    def state(self) -> ClusterState | None:
        """The on-disk state, or None when the cluster does not exist."""
        try:
            return ClusterState.load(self.config.name)
        except FileNotFoundError:
            return None

    def up(self) -> LocalClusterHandle:
        """Bring the cluster up and wait until it is usable. Raises ConfigError for bad input,
        PreflightError (ClusterUnavailable) for host problems, ClusterUnavailable for a component that
        failed (after tearing down what had started), KeyboardInterrupt for Ctrl-C/SIGTERM (after that tear-down:
        a second signal during it waits for its end)."""
        self._t0 = time.monotonic()
        tag = resolve_version(self.config.k8s_version)
        old = self.state()
        if old is not None:
            if any(p.is_running() for p in old.processes):
                raise ClusterUnavailable(
                    f"local cluster {self.config.name!r} is already running; "
                    f"run `dra-conformance cluster down --name {self.config.name}` first"
                )
            self._say(f"removing stale state of {self.config.name!r}")
            with signals_deferred():
                teardown(old)
        with host_lock():  # one cluster per slot: decide and record atomically
            owner = slots_in_use(exclude=self.config.name).get(self.config.slot)
            if owner:
                raise SlotTaken(f"slot {self.config.slot} is already recorded by local cluster {owner!r}")
            facts = preflight.run(
                tag, self.layout.all_ports(), need_kwok=self.config.kwok_nodes > 0, nodes=self.config.nodes
            )
            state = ClusterState(
                name=self.config.name,
                slot=self.config.slot,
                nodes=self.config.nodes,
                log_dir=str(self.layout.log_dir),
                k8s_version=tag,
                feature_gate_mode=self.config.feature_gates,
                binaries=facts.binaries,
            )
            state.host["netns"] = True
            if self.config.daemonset_paths:
                state.host["daemonset_paths"] = True
                state.save()  # recorded before creating anything: another cluster's tear-down keeps them
                node_mounts.ensure_mount_points(node_config.node_paths(self.layout, 0))
            if self.config.nri:
                state.host["nri"] = True
                state.save()  # recorded before creating /run/nri: another cluster's tear-down keeps it
                netdevs.ensure_nri_mount_point()
            state.save()
        self._say(f"pre-flight ok (Kubernetes {tag}, cgroup {facts.cgroup}, runc {facts.runc})")
        try:
            known = known_gates_cached(facts.binaries["kube-apiserver"], tag)
            BringUp(self.config, self.layout, state, self._say).run(facts, tag, known)
            self.handle = self._make_handle(state)
        except BaseException as exc:
            self._say(f"bring-up failed: {(str(exc) or type(exc).__name__).splitlines()[0]}; tearing down")
            self._teardown(state, interrupted=isinstance(exc, KeyboardInterrupt))
            if isinstance(exc, (ClusterUnavailable, ConfigError)):
                raise
            if isinstance(exc, (WaitError, images.ImageError, OSError, RuntimeError)):
                raise ClusterUnavailable(f"local cluster {self.config.name!r} failed to come up: {exc}") from exc
            raise
        return self.handle

    def down(self) -> None:
        """Stop everything and remove all traces (logs kept). Idempotent; raises TeardownError on leftovers."""
        state = self.state()
        if state is None:
            return
        t0 = time.monotonic()
        teardown(state)
        self.handle = None
        self.progress(f"[{time.monotonic() - t0:5.1f}s] cluster {self.config.name!r} torn down")

    # ---- bring-up ---------------------------------------------------------------------------------
    def _say(self, msg: str) -> None:
        self.progress(f"[{time.monotonic() - self._t0:5.1f}s] {msg}")

    def _teardown(self, state: ClusterState, interrupted: bool = False) -> None:
        """Tear down what ``up`` started, with Ctrl-C/SIGTERM deferred until it is done (a second one during
        it is noted and said; the caller's exception, or KeyboardInterrupt for the noted signal, follows). When
        it could not finish (TeardownError, or anything else it raised), names it and the command that
        finishes it. Never raises its own error. ``interrupted``: SIGINT/SIGTERM stay ignored after it (B8)."""
        hint = f"run `dra-conformance cluster down --name {state.name}` to remove what is left"
        with signals_deferred(ignore_after=interrupted) as noted:
            try:
                teardown(state)
            except Exception as exc:  # noqa: BLE001 - reported with the hint; the bring-up's own error follows
                self._say(f"tear-down did not finish: {(str(exc) or type(exc).__name__).splitlines()[0]}; {hint}")
            if noted:
                said = ", ".join(signal.Signals(s).name for s in noted)
                self._say(f"{said} during the tear-down: finished it first, now exiting as interrupted")

    def _make_handle(self, state: ClusterState) -> LocalClusterHandle:
        pki = Pki(self.layout.pki_dir)
        api = apilib.Api(
            f"https://127.0.0.1:{self.layout.apiserver_port}", pki.ca_cert, pki.cert("admin"), pki.key("admin")
        )
        return LocalClusterHandle(state, self.layout, api, self.layout.state_dir / "admin.kubeconfig")
