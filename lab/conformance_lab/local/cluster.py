"""LocalCluster: bring-up and tear-down of a real Kubernetes cluster run as host processes (no Docker).

Start order (local-cluster.md §3.7): network namespaces (netns: cluster, one per node, the forwarder) ->
etcd, kube-apiserver and every node's containerd in parallel -> /readyz -> controller-manager, scheduler, image
import, per node kubelet and kube-proxy -> nodes Ready, ``default``
ServiceAccount, ``kube-root-ca.crt``, resource.k8s.io/v1 served -> kwok fake nodes.
On any failure the partial cluster is torn down and ClusterUnavailable names the component with its log.
Ctrl-C/SIGTERM never cut a spawn from its record in the state, nor the tear-down (commands.signals_deferred).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from conformance.core.commands import signals_deferred
from conformance.core.errors import ClusterUnavailable, ConfigError, WaitError
from conformance_lab.local import api as apilib
from conformance_lab.local import control_plane as cp
from conformance_lab.local import gates as gatelib
from conformance_lab.local import hostsys, images, netdevs, netns, node_config, node_mounts, preflight
from conformance_lab.local.config import Layout, LocalClusterConfig, layout_for
from conformance_lab.local.handle import LocalClusterHandle
from conformance_lab.local.pki import Pki, write_kubeconfig
from conformance_lab.local.processes import HostProcess
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
        self.run_kube_proxy = self.config.kube_proxy is not False or self.config.daemonset_paths
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
            self.handle = self._bring_up(state, facts, tag)
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

    def _spawn(
        self,
        state: ClusterState,
        name: str,
        node: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        netns_pid: int | None = None,
    ) -> HostProcess:
        """Start and record ``argv`` (in the network namespace of ``netns_pid`` when given)."""
        log = self.layout.log_dir / (f"{node}-{name}.log" if node else f"{name}.log")
        argv = [*argv, *self.config.extra_args.get(name, ())]
        if netns_pid is not None:
            argv = netns.enter(netns_pid, argv)
        with signals_deferred():  # an interrupt between the two would leak a process no tear-down knows
            return state.add_process(HostProcess.spawn(name, node, argv, log, env=env))

    def _wait(self, awaited: str, probe, timeout: float, procs: list[HostProcess]) -> None:
        def failed() -> str | None:
            dead = [p for p in procs if not p.is_running()]
            return f"{dead[0].name} exited; its log ({dead[0].log_path}) ends with:\n{dead[0].tail()}" if dead else None

        apilib.wait_for(awaited, probe, timeout, failed=failed)

    def _bring_up(self, state: ClusterState, facts: preflight.HostFacts, tag: str) -> LocalClusterHandle:
        cfg, lay, b = self.config, self.layout, facts.binaries
        gates = gatelib.select(cfg.feature_gates, known_gates_cached(b["kube-apiserver"], tag))
        gates.update(cfg.extra_feature_gates)
        state.feature_gates, state.runtime_config = gates, gatelib.runtime_config(cfg.feature_gates, tag, gates)
        state.node_ip = lay.bridge_ip
        state.images = {**images.DEFAULT_IMAGES, **cfg.images}
        for d in (lay.state_dir, lay.run_dir, lay.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        hostsys.make_root_rshared()
        state.save()
        self._say(f"feature gates ({cfg.feature_gates}): {gatelib.flag_value(gates) or '(none)'}")
        kubeconfigs = self._pki(state)
        admin = kubeconfigs["admin"]
        cns, node_ns = netns.start(lay, lambda n, node, argv: self._spawn(state, n, node, argv), cfg.registry_mirror)
        self._say(f"network namespaces ready: bridge {lay.bridge_ip}, nodes {lay.node_ip(0)}..")
        etcd = self._spawn(state, "etcd", "", cp.etcd(b["etcd"], lay), netns_pid=cns)
        apiserver = self._spawn(
            state,
            "kube-apiserver",
            "",
            cp.apiserver(b["kube-apiserver"], lay, Pki(lay.pki_dir), state.node_ip, gates, state.runtime_config),
            netns_pid=cns,
        )
        ctrds = self._start_containerds(state, facts, node_ns)
        archives = (
            {}
            if cfg.registry_mirror
            else {  # a mirror: every image comes from a pull
                "pause": images.pause_archive(state.images["pause"]),
                "busybox": images.busybox_archive(state.images["busybox"]),
            }
        )
        pki = Pki(lay.pki_dir)
        api = apilib.Api(f"https://127.0.0.1:{lay.apiserver_port}", pki.ca_cert, pki.cert("admin"), pki.key("admin"))
        fwd = state.process(netns.FORWARDER)
        self._wait("kube-apiserver /readyz", lambda: apilib.readyz(api), 90, [etcd, apiserver, fwd])
        self._say("kube-apiserver ready")
        cp_procs = [
            etcd,
            apiserver,
            self._spawn(
                state,
                "kube-controller-manager",
                "",
                cp.controller_manager(b["kube-controller-manager"], lay, pki, admin, gates),
                netns_pid=cns,
            ),
            self._spawn(
                state, "kube-scheduler", "", cp.scheduler(b["kube-scheduler"], lay, admin, gates), netns_pid=cns
            ),
            fwd,
        ]
        kubelets = []
        holders = {p.node: p.pid for p in state.processes if p.name == node_mounts.HOLDER}
        for i, ctrd in enumerate(ctrds):
            np = node_config.node_paths(lay, i)
            self._wait(f"containerd of {np.name} serving", lambda np=np: self._ctr_ready(b["ctr"], np), 30, [ctrd])
            for archive in archives.values():
                images.import_image(Path(b["ctr"]), np.containerd_socket, archive)
            conf = node_config.kubelet_config(lay, np, pki.ca_cert, gates)
            argv = netns.enter(node_ns[i], node_config.kubelet_argv(b["kubelet"], np, conf, lay.node_ip(i)))
            if np.name in holders:  # root dir at the standard path: plugins' socket paths stay short and real
                argv = node_mounts.enter(holders[np.name], node_mounts.kubelet_argv(argv))
            kubelets.append(self._spawn(state, "kubelet", np.name, argv))
            if self.run_kube_proxy:  # one per node, in the node's namespace (its KUBE-* chains stay there)
                proxy = cp.kube_proxy(b["kube-proxy"], lay, kubeconfigs["kube-proxy"], i)
                kubelets.append(self._spawn(state, "kube-proxy", np.name, proxy, netns_pid=node_ns[i]))
        pulled = f"nothing imported: images pulled through {cfg.registry_mirror}"
        self._say(f"{'images imported' if archives else pulled}, {len(kubelets)} kubelet(s) started")
        names = [lay.node_name(i) for i in range(lay.nodes)]
        self._wait(
            f"nodes {names} Ready",
            lambda: apilib.nodes_ready(api, names),
            cfg.ready_timeout,
            cp_procs + ctrds + kubelets,
        )
        self._say("nodes Ready")
        for path in (
            "/api/v1/namespaces/default/serviceaccounts/default",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
            "/apis/resource.k8s.io/v1",
        ):
            self._wait(f"GET {path}", lambda path=path: apilib.exists(api, path), 60, cp_procs)
        if cfg.kwok_nodes:
            self._start_kwok(state, api, b["kwok"], admin, cp_procs)
        state.phase = "running"
        state.save()
        self._say(f"cluster {cfg.name!r} ready: {lay.nodes} node(s), kubeconfig {admin}")
        return self._make_handle(state)

    def _pki(self, state: ClusterState) -> dict[str, Path]:
        lay = self.layout
        pki = Pki(lay.pki_dir)
        pki.create()
        pki.issue_apiserver(lay.service_ip, state.node_ip)
        server = f"https://127.0.0.1:{lay.apiserver_port}"  # the host's forwarder; inside: the API server itself
        node_server = f"https://{lay.bridge_ip}:{lay.apiserver_port}"  # from the nodes' namespaces
        out = {}
        for name, cn, org in (
            ("admin", "dra-conformance-admin", "system:masters"),
            ("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
            ("kube-proxy", "system:kube-proxy", None),
        ):
            cert, key = pki.issue(name, cn, org)
            if name != "apiserver-kubelet-client":
                url = node_server if name == "kube-proxy" else server
                out[name] = write_kubeconfig(lay.state_dir / f"{name}.kubeconfig", url, pki.ca_cert, cert, key, cn)
        for i in range(lay.nodes):
            np = node_config.node_paths(lay, i)
            cert, key = pki.issue(f"kubelet-{i}", f"system:node:{np.name}", "system:nodes")
            for path, url in ((np.kubeconfig, server), (np.kubelet_kubeconfig, node_server)):
                write_kubeconfig(path, url, pki.ca_cert, cert, key, f"system:node:{np.name}")
        return out

    def _start_containerds(
        self, state: ClusterState, facts: preflight.HostFacts, node_ns: list[int]
    ) -> list[HostProcess]:
        """Each node's containerd in its network namespace (``node_ns[i]``: holder pid), and in its mount
        namespace with ``daemonset_paths``."""
        lay, procs = self.layout, []
        for i in range(lay.nodes):
            np = node_config.node_paths(lay, i)
            for d in (
                np.dir,
                np.run_dir,
                np.cdi_dir,
                np.kubelet_root / "plugins_registry",
                np.kubelet_root / "plugins",
                np.pod_logs_dir,
                *([np.nri_dir] if self.config.nri else []),
            ):
                d.mkdir(parents=True, exist_ok=True)
            hostsys.create_cgroup_root(lay.cgroup_root(i))
            node_config.cni_config(lay, np)
            conf = node_config.containerd_config(
                np,
                facts.runc,
                facts.cni_bin_dir,
                state.images["pause"],
                nri=self.config.nri,
                mirror=self.config.registry_mirror,
            )
            bin_dir = str(Path(facts.binaries["containerd"]).parent)  # containerd-shim-runc-v2 lives there
            env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
            argv = netns.enter(node_ns[i], node_config.containerd_argv(facts.binaries["containerd"], conf))
            if self.config.daemonset_paths:
                argv = node_mounts.enter(self._node_namespace(state, np), argv)
            procs.append(self._spawn(state, "containerd", np.name, argv, env=env))
        return procs

    def _node_namespace(self, state: ClusterState, np: node_config.NodePaths) -> int:
        """Start the process holding ``np``'s mount namespace (node_mounts); its pid once the mounts exist."""
        holder = self._spawn(state, node_mounts.HOLDER, np.name, node_mounts.holder_argv(np))
        ok, missing = node_mounts.wait_ready(np, holder.pid)
        if not ok:
            raise ClusterUnavailable(f"mount namespace of {np.name}: {missing}; its log ends with:\n{holder.tail()}")
        return holder.pid

    @staticmethod
    def _ctr_ready(ctr: str, np: node_config.NodePaths) -> tuple[bool, str]:
        if not np.containerd_socket.exists():
            return False, f"{np.containerd_socket} does not exist yet"
        proc = subprocess.run(
            [ctr, "--address", str(np.containerd_socket), "version"], capture_output=True, text=True, timeout=10
        )
        return proc.returncode == 0, (proc.stdout + proc.stderr).strip()[-300:]

    def _start_kwok(self, state: ClusterState, api: apilib.Api, kwok: str, admin: Path, procs) -> None:
        from conformance_lab.local.kwok import create_fake_nodes  # noqa: PLC0415 - kwok only when fake nodes are asked for

        cns = state.process(netns.CLUSTER_HOLDER)
        proc = self._spawn(
            state, "kwok", "", cp.kwok(kwok, self.layout, admin, state.node_ip), netns_pid=cns.pid if cns else None
        )
        state.kwok_nodes = create_fake_nodes(api, self.config.name, self.config.kwok_nodes)
        state.save()
        self._wait(
            f"kwok nodes {state.kwok_nodes} Ready",
            lambda: apilib.nodes_ready(api, state.kwok_nodes),
            60,
            [*procs, proc],
        )
        self._say(f"{len(state.kwok_nodes)} kwok node(s) Ready")

    def _make_handle(self, state: ClusterState) -> LocalClusterHandle:
        pki = Pki(self.layout.pki_dir)
        api = apilib.Api(
            f"https://127.0.0.1:{self.layout.apiserver_port}", pki.ca_cert, pki.cert("admin"), pki.key("admin")
        )
        return LocalClusterHandle(state, self.layout, api, self.layout.state_dir / "admin.kubeconfig")
