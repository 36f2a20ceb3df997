"""The dra-conformance pytest plugin (entry point ``dra_conformance``): thin glue over classes that do not
know pytest (design.md §2, §9; pytest-xdist/pytest-django pattern).

* options in one group (``--cluster``, ``--driver``, ``--profile``...) -> a frozen RunConfig;
* the registry of cluster providers and driver deployers: every ``pytest_dra_cluster_providers`` /
  ``pytest_dra_driver_deployers`` implementation (conformance/hookspecs.py; the shipped ones in
  conformance/clusters/builtin.py and conformance/drivers/builtin.py) plus the ``dra_conformance.*`` entry
  points (conformance/runner/registry.py);
* session: :class:`conformance.runner.session.Session` brings up cluster, driver and capabilities once (the
  xdist controller, or the only process); workers attach through the state file in the report dir;
* collection: deselect by ``--profile``; skip with evidence for missing ``requires(...)``; fail a test whose
  required capability the profile declares but the driver does not deliver;
* fixtures: run_config, cluster, driver, profile, capabilities, k8s, namespace, admin_namespace, tracker,
  builder, node_access, make_claim, make_pod; suite fixtures (probe, device_visible, inventory...) in
  :mod:`conformance.fixtures`;
* evidence for the reporting plugin (``pytest_dra_collect_evidence``) and run.json.

Inactive (options and markers only) unless ``--driver`` is given or the run collects suites/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import hookspecs, shipped, toolbox
from conformance.clusters import builtin as builtin_clusters
from conformance.core import errors, markers, names, options, selection
from conformance.core.config import deploy_mode, from_options, refuse_simulated_hardware
from conformance.drivers import builtin as builtin_drivers
from conformance.k8s.builders.builder import Builder, BuilderContext
from conformance.k8s.namespaces import make_namespace
from conformance.k8s.tracker import Tracker
from conformance.node import call_timing
from conformance.node.prepared import PreparedClaims
from conformance.runner import evidence, narrowing, parallel, timings
from conformance.runner.registry import Registry
from conformance.runner.session import Session, record_exercised

SUITES = shipped.suites_dir()
PLUGIN_NAME = "dra_conformance_harness"
DECISION = pytest.StashKey[selection.Decision]()
TRACKER = pytest.StashKey[Tracker]()
NAMESPACE = pytest.StashKey[str]()
HARNESS = pytest.StashKey["Harness"]()  # the run's Harness, on config.stash (no lookup by plugin name)
SERIAL_CAPS = set(  # capabilities whose tests change cluster state: one xdist group, run in turn
    "kubelet_restart plugin_restart node_reboot controller_manager_restart driver_reinstall api.devicetaintrules "
    "driver_surge_update "
    "driver.fault_injection".split()
)
EXIT_BAD_INPUT, EXIT_ENVIRONMENT = 4, 3


def pytest_addhooks(pluginmanager):
    """Add the harness hookspecs (registry hooks, ``pytest_dra_report_dir``) and register the shipped cluster
    providers and deploy modes as plugins, the way a vendor's plugin registers its own."""
    pluginmanager.add_hookspecs(hookspecs)
    for module in (builtin_clusters, builtin_drivers):
        if not pluginmanager.is_registered(module):
            pluginmanager.register(module, module.__name__)


def build_registry(config) -> Registry:
    """One Registry from every registry hook implementation (source: the plugin's name) and the entry
    points. Raises ConfigError for a malformed or duplicate registration."""
    registry = Registry()
    for kind, hook in (
        ("cluster provider", config.hook.pytest_dra_cluster_providers),
        ("driver deployer", config.hook.pytest_dra_driver_deployers),
    ):
        for impl in hook.get_hookimpls():
            registry.add_hook_result(kind, impl.function(), source=impl.plugin_name)
    registry.add_entry_points()
    return registry


def _taken(parser, flag: str) -> bool:
    groups = list(getattr(parser, "_groups", [])) + [getattr(parser, "_anonymous", None)]
    return any(flag in opt.names() for g in groups if g is not None for opt in g.options)


def pytest_addoption(parser):
    """Register the harness options in the ``dra-conformance`` group (``--report-dir`` may already exist)."""
    group = parser.getgroup("dra-conformance", "DRA driver conformance")
    for opt in options.OPTIONS:  # the table `dra-conformance run` shares (conformance/core/options.py)
        if not _taken(parser, opt.flag):
            extra = {"action": "store_true"} if opt.switch else {}
            try:
                group.addoption(opt.flag, dest=opt.dest, default=None, help=opt.help, **extra)
            except ValueError:  # registered meanwhile by the reporting plugin
                pass


def _active(config) -> bool:
    if config.getoption("driver", default=None):
        return True
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return any(path == SUITES or SUITES in path.parents for path in paths)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Declare the marker vocabulary; when active, build RunConfig (bad input -> UsageError) and register
    the per-run :class:`Harness`."""
    for line in markers.ini_lines():
        config.addinivalue_line("markers", line)
    if not _active(config):
        return
    worker = getattr(config, "workerinput", None)
    values = {o.dest: config.getoption(o.dest, default=None) for o in options.OPTIONS}
    values["run_id"] = (worker or {}).get("dra_run_id") or values["run_id"] or names.new_run_id()
    # `list`, --collect-only: no cluster, and nothing written unless a report directory was given
    listing, given_dir = bool(config.option.collectonly), bool(values["report_dir"])
    report_dir = (worker or {}).get("dra_report_dir") or values["report_dir"] or f"reports/{values['run_id']}"
    config.option.report_dir = values["report_dir"] = str(Path(report_dir).resolve())
    values.update({k: bool(values[k]) for k in ("allow_disruptive", "keep_cluster", "allow_install")})
    try:
        known = toolbox.k8s_versions()
    except toolbox.ToolMissing:  # the version list is a nicety for the error message
        known = ()
    try:
        cfg = from_options(values, known_versions=known)
        from conformance.drivers import profiles  # noqa: PLC0415

        registry = build_registry(config)
        profile = profiles.load(cfg.driver, registry.deploy_modes())
        registry.check("driver deployer", cfg.driver_deploy or profile.deploy_mode)  # a typo first
        if not listing:  # a listing needs no cluster: the plugin alone lists a profile's tests
            owned = registry.creates_cluster(cfg.cluster)  # ConfigError for an unknown --cluster
            registry.check("driver deployer", deploy_mode(cfg, profile.deploy_mode, owned=owned))
            refuse_simulated_hardware(profile.requires_hardware, cfg, profile.source, owned=owned)
    except errors.ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None  # before any report directory exists: bad input leaves none
    if not listing:
        config.hook.pytest_dra_report_dir(config=config)  # reporting turns on (allure/junit read paths later)
    if given_dir or not listing:
        narrowing.register(config, Path(cfg.report_dir))  # before the harness: it counts after --profile deselects
    config.stash[HARNESS] = harness = Harness(config, cfg, registry)
    config.pluginmanager.register(harness, PLUGIN_NAME)
    if not listing:
        parallel.register(config, harness.report_dir, harness.devices)  # xdist workers: locks, device shards
        timings.register(config, harness.report_dir, lambda: config.stash.get(parallel.LOCKS, None))
        call_timing.configure(harness.report_dir)  # the suite's own DRAPlugin calls, timed (issue 26 §4)
        config.add_cleanup(lambda: call_timing.configure(None))


class Harness:
    """Per-run hooks and state (``session`` is the live :class:`Session`)."""

    def __init__(self, config, cfg, registry: Registry) -> None:
        self.config, self.cfg, self.registry = config, cfg, registry
        self.report_dir = Path(cfg.report_dir)
        self.session: Session | None = None
        self.planned = None  # run --plan, list --kubeconfig: capabilities surveyed read-only (runner/plan.py)
        self.is_worker = hasattr(config, "workerinput")
        self.owner = False

    def devices(self) -> tuple | None:
        """``(driver name, devices discovered at the run's start)`` (``facts["devices"]``); None before then."""
        s = self.session
        return (s.driver.name, s.facts.get("devices") or []) if s is not None and s.driver is not None else None

    def _say(self, line: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"[dra-conformance] {line}")

    def pytest_report_header(self, config):
        return [
            f"dra-conformance: run {self.cfg.run_id}, driver {self.cfg.driver}, profile {self.cfg.profile}, "
            f"cluster {self.cfg.cluster}, report {self.report_dir}"
        ]

    def pytest_sessionstart(self, session):
        """Bring up (or attach to) the cluster, driver and capabilities; errors end the run cleanly."""
        if self.config.option.collectonly or self.config.option.help:
            return
        try:
            if self.is_worker:
                self.session = Session.attach(self.report_dir, self.registry)
            else:
                self.owner = True
                self.session = Session(self.cfg, self.report_dir, self.registry, self._say)
                self.session.setup()
        except errors.ConfigError as exc:
            self.session = None
            pytest.exit(f"dra-conformance: bad input: {exc}", returncode=EXIT_BAD_INPUT)
        except errors.ConformanceError as exc:
            self.session = None
            pytest.exit(f"dra-conformance: {type(exc).__name__}: {exc}", returncode=EXIT_ENVIRONMENT)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        """xdist: hand the run ID and report dir to each worker."""
        node.workerinput["dra_run_id"] = self.cfg.run_id
        node.workerinput["dra_report_dir"] = str(self.report_dir)

    def pytest_collection_modifyitems(self, session, config, items):
        """Deselect by --profile; decide skip/fail for requires(); group cluster-state tests for xdist."""
        caps = self.session.capabilities if self.session else self.planned
        keep, dropped = [], []
        for item in items:
            required = [c for m in item.iter_markers("requires") for c in m.args]
            try:
                decision = selection.decide([m.name for m in item.iter_markers()], required, self.cfg.profile, caps)
            except errors.ConfigError as exc:
                raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
            if decision.action == "deselect":
                dropped.append(item)
                continue
            keep.append(item)
            item.stash[DECISION] = decision
            if decision.action == "skip":
                item.add_marker(pytest.mark.skip(reason=decision.reason))
            if "disruptive" in [m.name for m in item.iter_markers()] or SERIAL_CAPS & set(required):
                item.add_marker(pytest.mark.xdist_group("dra-cluster-state"))
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep

    def pytest_collection_finish(self, session):
        """After every deselection (-k, -m, --profile): record what the selected tests exercise (run.json)."""
        record_exercised(self.session, session.items)

    def pytest_runtest_setup(self, item):
        """Fail a test whose required capability the profile declares but the driver does not deliver."""
        decision = item.stash.get(DECISION, None)
        if decision is not None and decision.action == "fail":
            pytest.fail(decision.reason, pytrace=False)

    @pytest.hookimpl(optionalhook=True)
    def pytest_dra_collect_evidence(self, item, call):
        """Evidence pieces for the reporting plugin (conformance.runner.evidence)."""
        if self.session is None:
            return []
        s = self.session
        return evidence.collect(
            k8s=s.k8s,
            tracker=item.stash.get(TRACKER, None),
            namespace=item.stash.get(NAMESPACE, None),
            driver=s.driver,
            cluster=s.cluster,
            node_access=s.node_access,
        )

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Owner, after the other sessionfinish hooks (fixture teardown, reports): finish run.json, sweep, remove
        driver and cluster; leaks turn a green run red. Also when Ctrl-C cut those hooks short (exit 2)."""
        try:
            yield
        except KeyboardInterrupt:  # e.g. in a test's fixture teardown: the session's teardown still runs
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        except Exception:  # e.g. ENOSPC writing junit.xml (issue 27 §2): the teardown still runs, then the error
            self._teardown(session)
            raise
        self._teardown(session)

    def _teardown(self, session) -> None:
        """The owner's end of the session: run.json finished (skipped when the report disk is full), teardown."""
        if not self.owner or self.session is None:
            return
        import contextlib  # noqa: PLC0415
        import time  # noqa: PLC0415

        with contextlib.suppress(OSError):  # ENOSPC on the report dir must not keep the run's objects
            self.session.write_run_json(finished=time.time(), interrupted=session.exitstatus == 2)  # Ctrl-C, SIGTERM
        problems = self.session.teardown()
        for p in problems:
            self._say(f"TEARDOWN PROBLEM: {p}")
        if self.session.interrupted:  # Ctrl-C during the teardown: the run ends as interrupted (exit 2)
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- fixtures --------------------------------------------------------------------------------------------
# Suite fixtures over these (probe, device_visible, inventory, admin_builder, attribute pickers); the
# after-module invariant checks (conformance/invariants.py: `<module>::invariants` results).
pytest_plugins = ["conformance.fixtures", "conformance.invariants"]


def _session(request) -> Session:
    harness = request.config.stash.get(HARNESS, None)
    if harness is None or harness.session is None:
        pytest.fail(
            "the dra-conformance harness is not set up: run `dra-conformance run` or pass --driver NAME", pytrace=False
        )
    return harness.session


@pytest.fixture(scope="session")
def run_config(request):
    """The frozen RunConfig of this run."""
    return _session(request).cfg


@pytest.fixture(scope="session")
def cluster(request):
    """The cluster handle (kubeconfig, k8s_version, nodes; local clusters also host paths)."""
    return _session(request).cluster


@pytest.fixture(scope="session")
def driver(request):
    """The DriverHandle: name, device_classes, logs(), restart(node) when available."""
    return _session(request).driver


@pytest.fixture(scope="session")
def profile(request):
    """The validated driver profile (DriverProfile)."""
    return _session(request).profile


@pytest.fixture(scope="session")
def capabilities(request):
    """The run's frozen Capabilities."""
    return _session(request).capabilities


@pytest.fixture(scope="session")
def k8s(request):
    """The Kubernetes client (write guard on: only this run's cluster-scoped objects may be modified)."""
    return _session(request).k8s


@pytest.fixture(scope="session")
def node_access(request):
    """NodeAccess of this cluster; skips (with evidence) when the cluster offers none."""
    s = _session(request)
    if s.node_access is None:
        pytest.skip(f"node_access not available: {s.capabilities.evidence('node_access')}")
    return s.node_access


@pytest.fixture
def tracker(request, k8s):
    """The test's resource tracker; teardown deletes in DRA order and raises LeakError on survivors (and,
    with node access, on claims a node still has prepared)."""
    s = _session(request)
    prepared = PreparedClaims(s.node_access, [n.name for n in s.cluster.nodes]) if s.node_access else None
    t = Tracker(k8s, prepared=prepared)
    parallel.guard(request.config, t)  # under xdist: the device lock before the test's first Pod
    request.node.stash[TRACKER] = t
    yield t
    t.cleanup()


@pytest.fixture
def namespace(request, tracker, run_config):
    """A fresh namespace for the test (name), removed after it."""
    ns = make_namespace(tracker, run_config.run_id, names.test_id(request.node.nodeid))
    request.node.stash[NAMESPACE] = ns.name
    return ns.name


@pytest.fixture
def admin_namespace(request, tracker, run_config):
    """A second namespace labelled ``resource.kubernetes.io/admin-access: "true"`` (KEP-5018)."""
    return make_namespace(
        tracker, run_config.run_id, names.test_id(request.node.nodeid) + "-admin", admin_access=True
    ).name


@pytest.fixture
def builder(request, namespace, run_config, driver, profile, cluster, capabilities):
    """A Builder bound to the test's namespace, labels, driver and DeviceClass (use
    ``builder.in_namespace(admin_namespace)`` for another namespace)."""
    s = _session(request)
    served = s.facts.get("served_versions", {})
    rule_version = next((v for v in ("v1", "v1beta2", "v1alpha3") if "devicetaintrules" in served.get(v, [])), "v1")
    image = profile.visibility.image or cluster.images.get("busybox") or "busybox:1.36"
    return Builder(
        BuilderContext(
            namespace=namespace,
            run_id=run_config.run_id,
            test_id=names.test_id(request.node.nodeid),
            driver=driver.name,
            device_class=driver.device_class,
            image=image,
            probe_command=profile.visibility.command,
            taint_rule_version=rule_version,
            shard_selector=parallel.shard_selector(request.node),  # under xdist: the test's device shard
        )
    )


@pytest.fixture
def make_claim(tracker, builder):
    """``make_claim(**builder.claim args)`` -> the created ResourceClaim."""
    return lambda **kw: tracker.create(builder.claim(**kw))


@pytest.fixture
def make_pod(tracker, builder):
    """``make_pod(**builder.pod args)`` -> the created Pod."""
    return lambda **kw: tracker.create(builder.pod(**kw))
