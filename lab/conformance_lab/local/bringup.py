"""The steps of one ``LocalCluster.up()`` (local-cluster.md §3.7), split from cluster.py, which keeps the
cluster's life cycle (state, slots, pre-flight, tear-down): network namespaces -> etcd, kube-apiserver and every
node's containerd in parallel -> /readyz -> controller-manager, scheduler, image import, per node kubelet and
kube-proxy -> nodes Ready, ``default`` ServiceAccount, ``kube-root-ca.crt``, resource.k8s.io/v1 served -> kwok
fake nodes. Every process is recorded in the cluster's state the moment it is spawned (signals deferred between
the two), so the caller's tear-down finds it whatever fails.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from conformance.core.commands import signals_deferred
from conformance.core.errors import ClusterUnavailable
from conformance_lab.local import api as apilib
from conformance_lab.local import control_plane as cp
from conformance_lab.local import gates as gatelib
from conformance_lab.local import hostsys, images, netns, node_config, node_mounts, preflight
from conformance_lab.local.config import Layout, LocalClusterConfig
from conformance_lab.local.pki import Pki, write_kubeconfig
from conformance_lab.local.processes import HostProcess
from conformance_lab.local.state import ClusterState


class BringUp:
    """One bring-up of the cluster ``config`` (``layout``) into ``state``; ``say`` prints a progress line.
    ``run()`` starts everything; ``spawn()`` starts and records one process."""

    def __init__(
        self, config: LocalClusterConfig, layout: Layout, state: ClusterState, say: Callable[[str], None]
    ) -> None:
        self.config, self.layout, self.state, self._say = config, layout, state, say
        self.run_kube_proxy = config.kube_proxy is not False or config.daemonset_paths

    def spawn(
        self,
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
            return self.state.add_process(HostProcess.spawn(name, node, argv, log, env=env))

    def _wait(self, awaited: str, probe, timeout: float, procs: list[HostProcess]) -> None:
        def failed() -> str | None:
            dead = [p for p in procs if not p.is_running()]
            return f"{dead[0].name} exited; its log ({dead[0].log_path}) ends with:\n{dead[0].tail()}" if dead else None

        apilib.wait_for(awaited, probe, timeout, failed=failed)

    def run(self, facts: preflight.HostFacts, tag: str, known_gates: dict[str, tuple[str, bool]]) -> None:
        """Start every component in order and wait until the cluster is usable; ``known_gates``: the built
        kube-apiserver's gates (name -> (stage, default)). Ends with the state's phase ``running``. Raises
        ClusterUnavailable/WaitError naming the component (with its log) that failed; the caller tears down."""
        cfg, lay, b, state = self.config, self.layout, facts.binaries, self.state
        gates = gatelib.select(cfg.feature_gates, known_gates)
        gates.update(cfg.extra_feature_gates)
        state.feature_gates, state.runtime_config = gates, gatelib.runtime_config(cfg.feature_gates, tag, gates)
        state.node_ip = lay.bridge_ip
        state.images = {**images.DEFAULT_IMAGES, **cfg.images}
        for d in (lay.state_dir, lay.run_dir, lay.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        hostsys.make_root_rshared()
        state.save()
        self._say(f"feature gates ({cfg.feature_gates}): {gatelib.flag_value(gates) or '(none)'}")
        kubeconfigs = self._pki()
        admin = kubeconfigs["admin"]
        cns, node_ns = netns.start(lay, self.spawn, cfg.registry_mirror)
        self._say(f"network namespaces ready: bridge {lay.bridge_ip}, nodes {lay.node_ip(0)}..")
        etcd = self.spawn("etcd", "", cp.etcd(b["etcd"], lay), netns_pid=cns)
        apiserver = self.spawn(
            "kube-apiserver",
            "",
            cp.apiserver(b["kube-apiserver"], lay, Pki(lay.pki_dir), state.node_ip, gates, state.runtime_config),
            netns_pid=cns,
        )
        ctrds = self._start_containerds(facts, node_ns)
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
            self.spawn(
                "kube-controller-manager",
                "",
                cp.controller_manager(b["kube-controller-manager"], lay, pki, admin, gates),
                netns_pid=cns,
            ),
            self.spawn("kube-scheduler", "", cp.scheduler(b["kube-scheduler"], lay, admin, gates), netns_pid=cns),
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
            kubelets.append(self.spawn("kubelet", np.name, argv))
            if self.run_kube_proxy:  # one per node, in the node's namespace (its KUBE-* chains stay there)
                proxy = cp.kube_proxy(b["kube-proxy"], lay, kubeconfigs["kube-proxy"], i)
                kubelets.append(self.spawn("kube-proxy", np.name, proxy, netns_pid=node_ns[i]))
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
            self._start_kwok(api, b["kwok"], admin, cp_procs)
        state.phase = "running"
        state.save()
        self._say(f"cluster {cfg.name!r} ready: {lay.nodes} node(s), kubeconfig {admin}")

    def _pki(self) -> dict[str, Path]:
        lay, state = self.layout, self.state
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

    def _start_containerds(self, facts: preflight.HostFacts, node_ns: list[int]) -> list[HostProcess]:
        """Each node's containerd in its network namespace (``node_ns[i]``: holder pid), and in its mount
        namespace with ``daemonset_paths``."""
        lay, procs, state = self.layout, [], self.state
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
                argv = node_mounts.enter(self._node_namespace(np), argv)
            procs.append(self.spawn("containerd", np.name, argv, env=env))
        return procs

    def _node_namespace(self, np: node_config.NodePaths) -> int:
        """Start the process holding ``np``'s mount namespace (node_mounts); its pid once the mounts exist."""
        holder = self.spawn(node_mounts.HOLDER, np.name, node_mounts.holder_argv(np))
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

    def _start_kwok(self, api: apilib.Api, kwok: str, admin: Path, procs) -> None:
        from conformance_lab.local.kwok import create_fake_nodes  # noqa: PLC0415 - kwok only when fake nodes are asked for

        state = self.state
        cns = state.process(netns.CLUSTER_HOLDER)
        proc = self.spawn(
            "kwok", "", cp.kwok(kwok, self.layout, admin, state.node_ip), netns_pid=cns.pid if cns else None
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
