"""The run's session, outside pytest: cluster provider ``up()`` -> driver ``deploy()`` -> capabilities, and the
teardown in reverse (sweep by run label -> driver -> cluster ``down()``); design.md §1.

The provider and the deployer come from :class:`conformance.runner.registry.Registry` by name; the session
never branches on those names. The xdist controller (or the only process) calls :meth:`Session.setup` and
:meth:`Session.teardown`; it writes a state file (provider name + the provider's own state, deploy mode) that
workers read with :meth:`Session.attach`: the provider re-opens its handle, the deployer its driver handle.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import time
from collections.abc import Callable
from pathlib import Path

from conformance import shipped
from conformance.core import errors, portable, timeouts
from conformance.core.capabilities import Capabilities
from conformance.core.config import RunConfig, deploy_mode
from conformance.core.handles import (
    ClusterHandle,
    ClusterProvider,
    DriverHandle,
    NodeAccess,
    ProviderContext,
    Stoppable,
)
from conformance.core.profile import DriverProfile
from conformance.drivers import profiles
from conformance.drivers.base import DeployContext, DriverDeployer
from conformance.k8s import discovery, health, kubeconfig, sweep, waits
from conformance.k8s.client import K8s
from conformance.node import kubelet_latency, kubelet_spans
from conformance.runner import facts as facts_mod
from conformance.runner import narrowing
from conformance.runner.registry import Registry

STATE_FILE = ".dra-session.json"
EXERCISED_FILE = ".dra-exercised.json"  # capabilities the selected tests require, written where tests are collected


class Session:
    """One run's cluster, driver and capabilities. ``registry`` supplies the cluster provider and the driver
    deployer by name (``cfg.cluster``; the mode of :func:`conformance.core.config.deploy_mode`: on a cluster
    the run does not create, ``preinstalled`` unless ``--allow-install``); every client reaches the cluster
    through one :func:`conformance.k8s.kubeconfig.resolve` (``kube``); ``progress`` receives one-line status
    messages. Raises ConfigError for a deploy mode the cluster does not allow."""

    def __init__(
        self, cfg: RunConfig, report_dir: Path, registry: Registry, progress: Callable[[str], None] = lambda s: None
    ) -> None:
        self.cfg, self.report_dir, self.registry, self.progress = cfg, Path(report_dir), registry, progress
        self.profile: DriverProfile = profiles.load(cfg.driver, registry.deploy_modes())
        owned = registry.creates_cluster(cfg.cluster)
        self.deploy_mode = deploy_mode(cfg, self.profile.deploy_mode, owned=owned)
        self.profile = self.profile.for_mode(self.deploy_mode)  # its deploy_alternatives entry, if any
        self.cluster: ClusterHandle | None = None
        self.cluster_provider: ClusterProvider | None = None
        self.deployer: DriverDeployer | None = None
        self.driver: DriverHandle | None = None
        self.k8s: K8s | None = None
        self.kube: kubeconfig.Kubeconfig | None = None
        self.node_access: NodeAccess | None = None
        self.node_access_choice: dict | None = None  # run.json node_access (_node_access_choice)
        self.capabilities: Capabilities | None = None
        self.facts: dict = {}
        self.exercised: set[str] = set()  # capabilities the selected tests require (set by the plugin)
        self.started = time.time()
        self.interrupted = False  # a Ctrl-C cut a teardown step short (the caller reports exit 2)
        self.health: health.Watcher | None = None  # API server reachability with timestamps (issue 27 §2)
        timeouts.set_scale(cfg.timeout_scale)

    def _provider(self) -> ClusterProvider:
        factory = self.registry.cluster_provider(self.cfg.cluster)
        nri = bool(self.profile.deploy.get("nri"))
        return factory(ProviderContext(self.cfg, self.report_dir, self.progress, self.deploy_mode, nri))

    def _deployer(self, cluster: ClusterHandle, k8s: K8s) -> DriverDeployer:
        factory = self.registry.driver_deployer(self.deploy_mode)
        return factory(
            DeployContext(
                mode=self.deploy_mode,
                cluster=cluster,
                profile=self.profile,
                k8s=k8s.unguarded(),
                run_id=self.cfg.run_id,
                state_root=self.report_dir / "driver-state",
                image_repo=self.cfg.image_repo,
                kubeconfig=self.kube,
                values_file=self.cfg.values,
            )
        )

    # -- setup ---------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Bring everything up; on any failure tear down what was started and re-raise (ConfigError,
        ClusterUnavailable, DriverNotReady...); a 403 (Forbidden) becomes ClusterUnavailable naming the fix."""
        try:
            self.registry.check("driver deployer", self.deploy_mode)
            self.cluster_provider = self._provider()
            self.cluster = cluster = self.cluster_provider.up()
            self.kube = kubeconfig.resolve(cluster.kubeconfig, self.cfg.context)
            self.k8s = k8s = K8s.from_kubeconfig(self.kube, guard_run_id=self.cfg.run_id)
            version = discovery.server_version(k8s)
            self.progress(f"cluster {self.cfg.cluster} reachable, Kubernetes {version}")
            self.node_access = self.cluster_provider.node_access(self.cfg.node_access)
            if getattr(self.node_access, "lifetime", ""):  # privileged helper pods: when they end if we are killed
                self.progress(self.node_access.lifetime)
            self.node_access_choice = self._node_access_choice()
            self.deployer = self._deployer(cluster, k8s)
            if self.deploy_mode == "preinstalled":  # nothing is installed: the driver the cluster's admin installed
                self.progress(f"checking the installed driver {self.profile.driver} (preinstalled: nothing installed)")
            else:
                self.progress(f"deploying driver {self.profile.driver} ({self.deploy_mode})")
            self.driver = self.deployer.deploy()
            self.capabilities, self.facts = facts_mod.discover(
                k8s, self.profile, cluster=cluster, node_access=self.node_access, driver=self.driver
            )
            k8s.prefer_versions(self.facts["served_versions"])
            self.progress(
                f"driver ready: {len(self.facts['devices'])} device(s) on "
                f"{len({d['node'] for d in self.facts['devices']})} node(s)"
            )
            (self.report_dir / EXERCISED_FILE).unlink(missing_ok=True)  # a reused --report-dir's earlier run
            (self.report_dir / narrowing.FILE).unlink(missing_ok=True)
            self.write_state()
            self.write_run_json()
            nodes = sorted({d["node"] for d in self.facts["devices"] if d.get("node")})  # the run's nodes
            self.health = health.Watcher(k8s, self.report_dir, nodes=nodes).start()  # cluster-health.jsonl
            if self.health.unprobeable:  # /readyz not readable now (403, a proxy's 404): no outage is attributed
                self.progress(f"cluster faults not watched: /readyz at the start said {self.health.unprobeable}")
            health.follow(self.report_dir)  # API calls stop being resent in a long outage (k8s/retries.py)
        except errors.Forbidden as exc:  # a 403 (a 401 is discovery.refused's): the way to find every missing one
            self.teardown()
            raise errors.ClusterUnavailable(
                f"the run's user lacks a permission the run needs: {exc} (fix: `dra-conformance preflight` lists "
                "every missing permission with the rule to add; `preflight --print-role` prints the ClusterRole)"
            ) from exc
        except BaseException:
            self.teardown()
            raise

    # -- state shared with xdist workers --------------------------------------------------------------
    def state(self) -> dict:
        """What a worker needs to attach (JSON-able): the provider's name and its own state, the deploy mode."""
        assert self.cluster_provider is not None and self.cluster is not None and self.driver is not None
        assert self.capabilities is not None
        return {
            "run_id": self.cfg.run_id,
            "config": self.cfg.as_dict(),
            "profile_source": self.profile.source,
            "cluster": {"provider": self.cfg.cluster, "state": self.cluster_provider.state()},
            "kubeconfig": str(self.cluster.kubeconfig),
            "driver": {"deploy": self.deploy_mode, "version": self.driver.version},
            "capabilities": self.capabilities.as_dict(),
            "facts": self.facts,
            "started": self.started,
        }

    def write_state(self) -> None:
        """Write the state file under a lock (readers never see half a file)."""
        path = self.report_dir / STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            facts_mod.write_json(path, self.state())

    def _exercised(self) -> set[str]:
        path = self.report_dir / EXERCISED_FILE
        return self.exercised | (set(json.loads(path.read_text())) if path.exists() else set())

    def _node_access_choice(self) -> dict:
        """run.json ``node_access`` (conformance.runner.facts.run_info): the ``--node-access`` choice and whether
        the cluster offers node access without an opt-in (its provider gives one for ``auto``: local, kind)."""
        choice, offered = self.cfg.node_access, self.node_access is not None
        if choice == "none":  # asked of the provider: local/kind give a handle (nothing started), existing None
            probe = self.cluster_provider.node_access("auto")
            offered = probe is not None
            if isinstance(probe, Stoppable):  # a provider that started something for it: stop it at once
                probe.stop()
        return {"choice": choice, "offered": offered, "declined": choice == "none" and offered}

    def write_run_json(self, finished: float | None = None, interrupted: bool = False) -> None:
        """Write <report_dir>/run.json (see facts.run_info; ``narrowing``: conformance.runner.narrowing;
        ``interrupted``: the run was stopped by Ctrl-C or SIGTERM, its report then says INTERRUPTED)."""
        if self.capabilities is None:
            return
        exercised = self._exercised()
        driver = {
            "name": self.profile.driver,
            "version": self.driver.version if self.driver else "",
            "profile": self.profile.name,
            "deploy": self.deploy_mode,
        }
        record = facts_mod.run_info(
            run_id=self.cfg.run_id,
            started=self.started,
            finished=finished,
            cluster_kind=self.cfg.cluster,
            facts=self.facts,
            driver=driver,
            profile=self.cfg.profile,
            feature_gates_mode=self.cfg.feature_gates
            if self.registry.creates_cluster(self.cfg.cluster)
            else "as the cluster runs (read from its metrics)",
            capabilities=self.capabilities,
            declared=tuple(  # declared by the profile or published in the driver's slices (Capability.declared)
                n for n, c in sorted(self.capabilities.items.items()) if c.declared and n in exercised
            ),
            narrowing=narrowing.load(self.report_dir) or None,
            node_access=self.node_access_choice,
            interrupted=interrupted,
        )
        # no path of this machine in a record that travels (issue 22 §5): the report dir and cwd relative, the
        # installed package and the profile's folder stripped (the profile reads as its file name), home as ~
        roots = [(shipped.SOURCE_ROOT, "")] + (
            [(Path(src).resolve().parent, "")] if (src := self.profile.source) else []
        )
        prefixes = portable.machine_prefixes(self.report_dir, roots)
        facts_mod.write_json(self.report_dir / "run.json", portable.scrub(record, prefixes))

    @classmethod
    def attach(cls, report_dir: Path, registry: Registry, wait_s: float = 1800.0) -> Session:
        """A worker's view of the controller's session (waits for the state file, bounded): the provider
        re-opens its handle from its own state, the deployer its driver handle. A worker owns neither (its
        session has no provider or deployer to tear down)."""
        path = Path(report_dir) / STATE_FILE
        if not waits.poll(path.exists, timeout=wait_s, interval=1.0, scale=False):
            raise errors.ClusterUnavailable(f"no session state at {path} after {wait_s:.0f}s")
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            state = json.loads(path.read_text())
        cfg = RunConfig(**state["config"])
        self = cls(dataclasses.replace(cfg, driver=state["profile_source"]), report_dir, registry)
        self.cfg, self.deploy_mode = cfg, state["driver"]["deploy"]
        self.kube = kubeconfig.resolve(state["kubeconfig"], cfg.context)
        self.k8s = K8s.from_kubeconfig(self.kube, guard_run_id=cfg.run_id)
        self.capabilities = Capabilities.from_dict(state["capabilities"])
        self.facts, self.started = state["facts"], state["started"]
        self.k8s.prefer_versions(self.facts.get("served_versions", {}))
        provider = self.registry.cluster_provider(state["cluster"]["provider"])(
            ProviderContext(cfg, self.report_dir, self.progress)
        )
        self.cluster = provider.attach(state["cluster"]["state"])
        self.node_access = provider.node_access(cfg.node_access, owner=False)
        self.driver = self._deployer(self.cluster, self.k8s).attach(state["driver"])
        health.follow(self.report_dir)  # the owner's watcher log bounds this worker's resends (k8s/retries.py)
        return self

    # -- teardown ------------------------------------------------------------------------------------
    def teardown(self) -> list[str]:
        """Remove node-access helpers (waiting until gone), sweep the run's objects, remove the driver, stop the
        cluster (unless kept or existing).

        Returns problems (leaks, errors) as text; never raises, so every step runs. Ctrl-C (KeyboardInterrupt)
        cuts short only the step it lands in (the sweep, then or later, requests the remaining deletions without
        waiting) and sets :attr:`interrupted`."""
        steps, mark = [], time.monotonic()

        def step(name: str) -> None:  # seconds per step, said in one progress line at the end
            nonlocal mark
            steps.append(f"{name} {time.monotonic() - mark:.1f}s")
            mark = time.monotonic()

        problems: list[str] = self._record_latency()
        step("latency")
        problems += self._stop_node_access()
        if self.k8s is not None and self.interrupted:  # Ctrl-C landed above: request the deletions, await none
            problems.append(self._abandon_sweep())
            self.k8s = None
        if self.k8s is not None:
            try:
                swept = sweep.sweep_run(self.k8s, self.cfg.run_id)
                if swept:
                    self.progress(
                        f"sweep removed {len(swept)} leftover object(s) of run {self.cfg.run_id}: "
                        + ", ".join(swept[:10])
                    )
            except errors.LeakError as exc:
                problems.append(str(exc))
            except KeyboardInterrupt:  # Ctrl-C: request every deletion, await none, finish the teardown
                self.interrupted = True
                problems.append(self._abandon_sweep())
            except Exception as exc:  # noqa: BLE001 - cluster may be gone; report and continue
                problems.append(f"sweep of run {self.cfg.run_id} failed: {exc}")
            self.k8s = None  # teardown is idempotent: a second call (sessionfinish after a failed setup) is a no-op
        step("node access + sweep")
        problems += self._stop_health()  # after the sweep: an outage during it is on record too
        if self.deployer is not None:
            problems += self._attempt("driver teardown", self.deployer.teardown)
            self.deployer = None
            step("driver")
        if self.cluster_provider is not None and not self.cfg.keep_cluster:
            problems += self._attempt("cluster down", self.cluster_provider.down)
            self.cluster_provider = None
            step("cluster")
        if len(steps) > 2:
            self.progress(f"teardown: {', '.join(steps)}")
        (self.report_dir / STATE_FILE).unlink(missing_ok=True)
        (self.report_dir / STATE_FILE).with_suffix(".lock").unlink(missing_ok=True)
        return problems

    def _attempt(self, what: str, action: Callable[[], object]) -> list[str]:
        """Run one teardown step; ``["<what> failed: <error>"]`` when it raised (Ctrl-C included: it sets
        :attr:`interrupted` and the teardown goes on), else []."""
        try:
            action()
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001
            self.interrupted |= isinstance(exc, KeyboardInterrupt)
            return [f"{what} failed: {str(exc) or type(exc).__name__}"]
        return []

    def _stop_node_access(self) -> list[str]:
        """Remove the node-access helpers (waiting until gone); a problem when that failed."""
        if not isinstance(self.node_access, Stoppable):
            return []
        problems = self._attempt("node access helper removal", self.node_access.stop)
        self.node_access = None
        return problems

    def _record_latency(self) -> list[str]:
        """Per-driver NodePrepare/Unprepare latency from the kubelets, before anything is removed; a problem
        (not an exception) when the report dir cannot take it (ENOSPC), so the sweep after it still runs."""
        if self.k8s is None or self.cluster is None or self.driver is None:
            return []
        try:
            kubelet_latency.record(self.k8s, [n.name for n in self.cluster.nodes], self.report_dir, self.progress)
            kubelet_spans.record(self.cluster, self.report_dir)  # the kubelet's own prepare spans (its log)
        except KeyboardInterrupt:
            self.interrupted = True
        except OSError as exc:
            return [f"kubelet latency not recorded: {exc}"]
        return []

    def _stop_health(self) -> list[str]:
        """Stop the cluster-health watcher (conformance/k8s/health.py); a problem when its log was not written."""
        watcher, self.health = self.health, None
        health.follow(None)
        if watcher is None:
            return []
        watcher.stop()
        return [f"cluster health log not written: {watcher.write_error}"] if watcher.write_error else []

    def _abandon_sweep(self) -> str:
        """After Ctrl-C in the sweep: ask for the deletion of everything of the run, wait for nothing."""
        try:
            asked = sweep.request_deletion(self.k8s, self.cfg.run_id)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - a second Ctrl-C, or the cluster is gone
            return (
                f"sweep of run {self.cfg.run_id} interrupted; requesting the remaining deletions failed: "
                f"{str(exc) or type(exc).__name__}"
            )
        return f"sweep of run {self.cfg.run_id} interrupted (Ctrl-C): deletion requested, not awaited" + (
            f", now for {', '.join(asked[:10])}" if asked else ""
        )


def record_exercised(session: Session | None, items: list) -> None:
    """Record the capabilities the selected pytest ``items`` require (``requires`` markers) on ``session`` (none:
    nothing to record) and in <report_dir>/.dra-exercised.json: under xdist only the workers collect tests (each
    the same set) and the controller, with no items, keeps their record; its run.json needs them for the
    declared capabilities (an empty set would let a declared but unavailable capability pass unchecked)."""
    if session is None or not items:
        return
    session.exercised = {c for i in items for m in i.iter_markers("requires") for c in m.args}
    facts_mod.write_json(session.report_dir / EXERCISED_FILE, sorted(session.exercised))
