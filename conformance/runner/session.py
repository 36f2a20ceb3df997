"""The run's session, outside pytest: cluster provider ``up()`` -> driver ``deploy()`` -> capabilities, and the
teardown in reverse (sweep by run label -> driver -> cluster ``down()``); design.md §1.

The xdist controller (or the only process) calls :meth:`Session.setup` and :meth:`Session.teardown`; it writes
a state file that workers read with :meth:`Session.attach` so every process talks to the same cluster.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from conformance.core import errors, timeouts
from conformance.core.capabilities import Capabilities
from conformance.core.config import RunConfig
from conformance.core.profile import DriverProfile
from conformance.drivers import profiles
from conformance.drivers.base import DriverHandle
from conformance.drivers.factory import make_deployer
from conformance.k8s import discovery, sweep
from conformance.k8s.client import K8s

from . import facts as facts_mod

STATE_FILE = ".dra-session.json"
LOCAL_SLOT = 2  # first slot for conformance runs (0: the e2e cluster, 1: its lifecycle tests)


def local_cluster_name(run_id: str) -> str:
    """``c<last 4 hex of the run ID>``: unique per run and short, because kubelet plugin sockets live under
    the cluster directory and unix socket paths are limited (gRPC refuses paths over 105 bytes)."""
    return "c" + run_id.rsplit("-", 1)[-1][-4:]


@dataclasses.dataclass
class ExistingNode:
    """A node of a cluster the harness did not create (no host paths)."""

    name: str


@dataclasses.dataclass
class ExistingCluster:
    """Handle of ``--cluster existing``: kubeconfig, version and node names from the API."""

    kubeconfig: Path
    k8s_version: str
    nodes: list
    feature_gates: dict = dataclasses.field(default_factory=dict)
    runtime_config: str = ""
    images: dict = dataclasses.field(default_factory=lambda: {"busybox": "busybox:1.36"})


def docker_available() -> tuple[bool, str]:
    """Whether a Docker engine answers ``docker info`` (needed by kind)."""
    docker = shutil.which("docker")
    if not docker:
        return False, "the docker CLI is not installed"
    try:
        proc = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"docker info failed: {exc}"
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or ["docker info failed"])[-1]


class Session:
    """One run's cluster, driver and capabilities. ``progress`` receives one-line status messages."""

    def __init__(self, cfg: RunConfig, report_dir: Path, progress: Callable[[str], None] = lambda s: None) -> None:
        self.cfg, self.report_dir, self.progress = cfg, Path(report_dir), progress
        self.profile: DriverProfile = profiles.load(cfg.driver)
        self.cluster: Any = None
        self.cluster_provider: Any = None
        self.deployer: Any = None
        self.driver: DriverHandle | None = None
        self.k8s: K8s | None = None
        self.node_access: Any = None
        self.capabilities: Capabilities | None = None
        self.facts: dict = {}
        self.started = time.time()
        self.local_name = ""
        self.interrupted = False  # a Ctrl-C cut a teardown step short (the caller reports exit 2)
        timeouts.set_scale(cfg.timeout_scale)

    # -- setup ---------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Bring everything up; on any failure tear down what was started and re-raise (ConfigError,
        ClusterUnavailable, DriverNotReady...)."""
        try:
            self._cluster_up()
            self.k8s = K8s.from_kubeconfig(self.cluster.kubeconfig, self.cfg.context, guard_run_id=self.cfg.run_id)
            version = discovery.server_version(self.k8s)
            self.progress(f"cluster {self.cfg.cluster} reachable, Kubernetes {version}")
            self.node_access = self._node_access()
            self.deployer = make_deployer(self.cfg.driver_deploy, self.cluster, self.profile, self.k8s.unguarded(),
                                          run_id=self.cfg.run_id, state_root=self.report_dir / "driver-state",
                                          image_repo=self.cfg.image_repo)
            self.progress(f"deploying driver {self.profile.driver} ({self.cfg.driver_deploy or self.profile.deploy_mode})")
            self.driver = self.deployer.deploy()
            self.capabilities, self.facts = facts_mod.discover(
                self.k8s, self.profile, cluster=self.cluster, node_access=self.node_access,
                restart_plugin=bool(self.driver.processes))
            self.k8s.prefer_versions(self.facts["served_versions"])
            self.progress(f"driver ready: {len(self.facts['devices'])} device(s) on "
                          f"{len({d['node'] for d in self.facts['devices']})} node(s)")
            self.write_state()
            self.write_run_json()
        except BaseException:
            self.teardown()
            raise

    def _cluster_up(self) -> None:
        kind = self.cfg.cluster
        if kind == "local":
            from conformance.clusters.local import LocalCluster, LocalClusterConfig  # noqa: PLC0415
            from conformance.clusters.local.state import ClusterState, existing_clusters  # noqa: PLC0415
            # a name and slot (ports, subnets) of its own, so runs coexist with each other and with the e2e
            # cluster; kube-proxy owns host-wide iptables chains: up() decides under a host-wide lock whether
            # this cluster runs it (kube_proxy=None)
            others = existing_clusters()
            used = set()
            for other in others:
                try:
                    used.add(ClusterState.load(other).slot)
                except (OSError, ValueError, KeyError):
                    continue
            free = [s for s in range(LOCAL_SLOT, 10) if s not in used]
            if not free:
                raise errors.ClusterUnavailable(f"no free local cluster slot: clusters {others} use slots "
                                                f"{sorted(used)}; stop one with `dra-conformance cluster down`")
            self.local_name = local_cluster_name(self.cfg.run_id)
            self.cluster_provider = LocalCluster(LocalClusterConfig(
                name=self.local_name, nodes=self.cfg.nodes, kwok_nodes=0, k8s_version=self.cfg.k8s_version,
                feature_gates=self.cfg.feature_gates, log_dir=self.report_dir / "cluster-logs", slot=free[0],
                kube_proxy=None), self.progress)
            self.progress(f"starting local cluster ({self.cfg.nodes} node(s), gates {self.cfg.feature_gates})")
            self.cluster = self.cluster_provider.up()
        elif kind == "kind":
            ok, why = docker_available()
            if not ok:
                raise errors.ClusterUnavailable(f"--cluster kind needs a running Docker engine: {why}; use "
                                                "--cluster local (no Docker needed) or --cluster existing --kubeconfig")
            raise errors.ClusterUnavailable("--cluster kind: creating kind clusters is not implemented by this "
                                            "harness yet; create one with `kind create cluster` and pass "
                                            "--cluster existing --kubeconfig <its kubeconfig>")
        else:
            k8s = K8s.from_kubeconfig(self.cfg.kubeconfig, self.cfg.context)
            version = discovery.server_version(k8s)
            path = Path(self.cfg.kubeconfig) if self.cfg.kubeconfig else Path.home() / ".kube" / "config"
            self.cluster = ExistingCluster(path, version, [ExistingNode(n.name) for n in discovery.nodes(k8s)])

    def _node_access(self) -> Any:
        if self.cfg.node_access == "none":
            return None
        if self.cfg.cluster == "local":
            from conformance.node.local import LocalNodeAccess  # noqa: PLC0415
            return LocalNodeAccess(self.cluster)
        if self.cfg.cluster == "kind":
            from conformance.node.kind import KindNodeAccess  # noqa: PLC0415
            return KindNodeAccess([n.name for n in self.cluster.nodes])
        if self.cfg.node_access == "privileged-pod":
            from conformance.node.helper_pod import HelperPodNodeAccess  # noqa: PLC0415
            access = HelperPodNodeAccess(self.k8s.unguarded(), [n.name for n in self.cluster.nodes], self.cfg.run_id,
                                         image=(getattr(self.cluster, "images", {}) or {}).get("busybox", "busybox:1.36"))
            access.start()
            return access
        return None  # existing clusters: node access only with the explicit --node-access privileged-pod

    # -- state shared with xdist workers --------------------------------------------------------------
    def state(self) -> dict:
        """What a worker needs to attach (JSON-able)."""
        return {"run_id": self.cfg.run_id, "config": self.cfg.as_dict(), "profile_source": self.profile.source,
                "cluster_kind": self.cfg.cluster, "kubeconfig": str(self.cluster.kubeconfig),
                "local_name": self.local_name if self.cfg.cluster == "local" else "",
                "driver": {"deploy": self.driver.deploy_mode, "version": self.driver.version},
                "capabilities": self.capabilities.as_dict(), "facts": self.facts, "started": self.started}

    def write_state(self) -> None:
        """Write the state file under a lock (readers never see half a file)."""
        path = self.report_dir / STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            facts_mod.write_json(path, self.state())

    def write_run_json(self, finished: float | None = None) -> None:
        """Write <report_dir>/run.json (see facts.run_info)."""
        if self.capabilities is None:
            return
        driver = {"name": self.profile.driver, "version": self.driver.version if self.driver else "",
                  "profile": self.profile.name, "deploy": self.cfg.driver_deploy or self.profile.deploy_mode}
        facts_mod.write_json(self.report_dir / "run.json", facts_mod.run_info(
            run_id=self.cfg.run_id, started=self.started, finished=finished, cluster_kind=self.cfg.cluster,
            facts=self.facts, driver=driver, profile=self.cfg.profile, feature_gates_mode=self.cfg.feature_gates,
            capabilities=self.capabilities,
            declared=tuple(c for c in (f"driver.{k}" for k, v in self.profile.capabilities.items() if v is True)
                           if c in getattr(self, "exercised", ()))))

    @classmethod
    def attach(cls, report_dir: Path, wait_s: float = 1800.0) -> "Session":
        """A worker's view of the controller's session (waits for the state file, bounded)."""
        path = Path(report_dir) / STATE_FILE
        deadline = time.monotonic() + wait_s
        while not path.exists():
            if time.monotonic() > deadline:
                raise errors.ClusterUnavailable(f"no session state at {path} after {wait_s:.0f}s")
            time.sleep(1)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            state = json.loads(path.read_text())
        cfg = RunConfig(**state["config"])
        self = cls(dataclasses.replace(cfg, driver=state["profile_source"]), report_dir)
        self.cfg = cfg
        self.k8s = K8s.from_kubeconfig(state["kubeconfig"], cfg.context, guard_run_id=cfg.run_id)
        self.capabilities = Capabilities.from_dict(state["capabilities"])
        self.facts, self.started = state["facts"], state["started"]
        self.k8s.prefer_versions(self.facts.get("served_versions", {}))
        if state["local_name"]:
            from conformance.clusters.local import LocalCluster  # noqa: PLC0415
            self.cluster = LocalCluster.load(state["local_name"]).handle
            self.node_access = self._node_access()
        else:
            self.cluster = ExistingCluster(Path(state["kubeconfig"]), state["facts"].get("k8s_version", ""),
                                           [ExistingNode(n["name"]) for n in state["facts"].get("nodes", [])])
        procs = {}
        if self.cluster is not None and hasattr(self.cluster, "host_processes"):
            procs = {p.node: p for p in self.cluster.host_processes() if p.name == f"driver-{self.profile.name}"}
        self.driver = DriverHandle(name=self.profile.driver, device_classes=self.profile.device_classes,
                                   profile=self.profile, deploy_mode=state["driver"]["deploy"],
                                   version=state["driver"]["version"], processes=procs,
                                   restart=(lambda node: procs[node].restart()) if procs else None)
        return self

    # -- teardown ------------------------------------------------------------------------------------
    def teardown(self) -> list[str]:
        """Sweep the run's objects, remove the driver, stop the cluster (unless kept or existing).

        Returns problems (leaks, errors) as text; never raises, so every step runs. Ctrl-C (KeyboardInterrupt)
        cuts short only the step it lands in (the sweep then requests the remaining deletions without waiting)
        and sets :attr:`interrupted`."""
        problems: list[str] = []
        if self.k8s is not None:
            try:
                swept = sweep.sweep_run(self.k8s, self.cfg.run_id)
                if swept:
                    self.progress(f"sweep removed {len(swept)} leftover object(s) of run {self.cfg.run_id}: "
                                  + ", ".join(swept[:10]))
            except errors.LeakError as exc:
                problems.append(str(exc))
            except KeyboardInterrupt:  # Ctrl-C: request every deletion, await none, finish the teardown
                self.interrupted = True
                problems.append(self._abandon_sweep())
            except Exception as exc:  # noqa: BLE001 - cluster may be gone; report and continue
                problems.append(f"sweep of run {self.cfg.run_id} failed: {exc}")
            self.k8s = None  # teardown is idempotent: a second call (sessionfinish after a failed setup) is a no-op
        if hasattr(self.node_access, "stop"):
            try:
                self.node_access.stop()
            except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
                self.interrupted |= isinstance(exc, KeyboardInterrupt)
                problems.append(f"node access helper removal failed: {str(exc) or type(exc).__name__}")
            self.node_access = None
        if self.deployer is not None:
            try:
                self.deployer.teardown()
            except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
                self.interrupted |= isinstance(exc, KeyboardInterrupt)
                problems.append(f"driver teardown failed: {str(exc) or type(exc).__name__}")
            self.deployer = None
        if self.cluster_provider is not None and not self.cfg.keep_cluster:
            try:
                self.cluster_provider.down()
            except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
                self.interrupted |= isinstance(exc, KeyboardInterrupt)
                problems.append(f"cluster down failed: {str(exc) or type(exc).__name__}")
            self.cluster_provider = None
        (self.report_dir / STATE_FILE).unlink(missing_ok=True)
        (self.report_dir / STATE_FILE).with_suffix(".lock").unlink(missing_ok=True)
        return problems

    def _abandon_sweep(self) -> str:
        """After Ctrl-C in the sweep: ask for the deletion of everything of the run, wait for nothing."""
        try:
            asked = sweep.request_deletion(self.k8s, self.cfg.run_id)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - a second Ctrl-C, or the cluster is gone
            return (f"sweep of run {self.cfg.run_id} interrupted; requesting the remaining deletions failed: "
                    f"{str(exc) or type(exc).__name__}")
        return (f"sweep of run {self.cfg.run_id} interrupted (Ctrl-C): deletion requested, not awaited"
                + (f", now for {', '.join(asked[:10])}" if asked else ""))
