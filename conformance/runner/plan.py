"""``dra-conformance run --plan`` and ``list --kubeconfig``: what a run would do, decided read-only (issue 22 §2).

:func:`survey` is the run's session start without its writes: the same :class:`conformance.runner.session.Session`
(profile, deploy mode, cluster provider), the provider's ``up()`` only when the run would not create the cluster
(``existing``: it reads /version and the Nodes), the same facts (:func:`conformance.runner.facts.collect`: API
discovery, Nodes, ResourceSlices, metrics) and the same :func:`conformance.core.capabilities.evaluate`; no driver is
deployed, no node-access helper started, nothing created. What only a started run can probe (the privileged helper
pods of ``--node-access privileged-pod``, a driver the run would install) is marked *at-start*.

:class:`PlanPlugin` (loaded with ``-p conformance.runner.plan --dra-plan plan|list|json`` under ``--collect-only``)
hands those capabilities to the harness, whose ``pytest_collection_modifyitems`` makes the decisions
(:func:`conformance.core.selection.decide`: one implementation), then collects them as :class:`TestDecision` and
prints them (conformance/runner/plan_render.py).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import pytest

from conformance import shipped
from conformance.core import capabilities as caps_mod
from conformance.core import errors, markers, selection
from conformance.core import options as run_options
from conformance.core.config import RunConfig
from conformance.drivers.readiness import check_device_classes
from conformance.k8s import kubeconfig
from conformance.k8s.client import K8s
from conformance.node.helper_pod import HelperPodNodeAccess
from conformance.runner import facts as facts_mod
from conformance.runner import plan_render
from conformance.runner.registry import Registry
from conformance.runner.session import Session

MODES = ("plan", "list", "json")
NODE_PROBED = ("node_access", "kubelet_restart", "plugin_registration")  # probed through the helper pods
DRIVER_PROBED = (  # abilities of the deployed driver handle
    "plugin_restart",
    "driver_reinstall",
    "driver_upgrade",
    "driver_downgrade",
    "driver_slices_writable",
    "driver_surge_update",
)


@dataclasses.dataclass
class Survey:
    """What a run with ``cfg`` would use, found read-only. ``owned``: the run creates the cluster (then nothing
    below ``nodes`` is known before ``cluster up``: ``capabilities`` is None); ``nodes``: node names (an owned
    cluster: the count it would create); ``driver_nodes``: ``{node: devices}`` from the driver's ResourceSlices;
    ``helper``: the node-access helper the run would start ("" for none); ``notes``: readiness problems the run
    would stop on (exit 3); ``at_start``: capability names decided only by a started run (evidence says why)."""

    cfg: RunConfig
    driver: str
    deploy_mode: str
    owned: bool
    nodes: list[str]
    server: str = ""
    k8s_version: str = ""
    kubeconfig: str = ""
    driver_nodes: dict[str, int] = dataclasses.field(default_factory=dict)
    helper: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)
    capabilities: caps_mod.Capabilities | None = None
    at_start: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class TestDecision:
    """One collected test: ``id`` (pytest node ID), ``area`` (its first area marker, "" for none), ``decision``:
    run | skip | waived (a skip the driver profile opts into) | fail (declared but broken) | at-start (decided by
    a probe of the started run) | deselect (not in --profile), ``reason`` (the evidence; "" for run),
    ``namespaces``: namespaces the test creates (a namespace per test, labelled with the run ID)."""

    id: str
    area: str
    decision: str
    reason: str = ""
    namespaces: int = 0

    def as_dict(self) -> dict:
        """``{id, area, decision, reason}`` (``list -o json``)."""
        return {"id": self.id, "area": self.area, "decision": self.decision, "reason": self.reason}


def _unprobed(facts: dict, why: str, keys: tuple[str, ...]) -> None:
    for key in keys:
        facts[key] = (False, f"decided when the run starts: {why}")


def survey(cfg: RunConfig, registry: Registry) -> Survey:
    """Survey the run ``cfg`` would make, writing nothing (module docstring). Raises ClusterUnavailable when the
    cluster cannot be reached (exit 3) and ConfigError for bad input (exit 4)."""
    session = Session(cfg, Path(cfg.report_dir or "."), registry)
    profile, owned = session.profile, registry.creates_cluster(cfg.cluster)
    out = Survey(cfg, profile.driver, session.deploy_mode, owned, [])
    if owned:
        out.nodes = [f"{cfg.nodes} node(s) of a new {cfg.cluster} cluster"]
        return out
    cluster = session._provider().up()  # a provider that does not create its cluster: up() connects and reads
    kube = kubeconfig.resolve(cluster.kubeconfig, cfg.context)
    k8s = K8s.from_kubeconfig(kube, guard_run_id=cfg.run_id)
    driver = None
    if session.deploy_mode == "preinstalled":  # the handle a preinstalled run gets: nothing installed, no state
        driver = session._deployer(cluster, k8s).attach({})
    facts = facts_mod.collect(k8s, profile, cluster=cluster, node_access=None, driver=driver)
    at_start: list[str] = []
    if cfg.node_access == "privileged-pod":
        access = HelperPodNodeAccess(k8s, [n.name for n in cluster.nodes], cfg.run_id)
        images = getattr(cluster, "images", None) or {}
        relay = f"gRPC relay {images['grpc']}" if images.get("grpc") else "no gRPC relay image on every node"
        out.helper = (
            f"one privileged helper pod per node in namespace {access.namespace} (removed at the end; image "
            f"{images.get('busybox', access.image)}, {relay})"
        )
        _unprobed(
            facts, "the run probes it through its privileged helper pods, which --plan does not start", NODE_PROBED
        )
        at_start += NODE_PROBED
    if driver is None:
        _unprobed(facts, f"the run installs the driver ({session.deploy_mode}) first", DRIVER_PROBED)
        at_start += DRIVER_PROBED
    out.capabilities = caps_mod.evaluate(facts, profile)
    out.at_start = frozenset(at_start)
    out.nodes = [n["name"] for n in facts["nodes"]]
    out.k8s_version, out.kubeconfig, out.server = (
        facts["k8s_version"],
        kubeconfig.resolve(cfg.kubeconfig, cfg.context).describe(),
        k8s.host,
    )
    out.driver_nodes = dict(Counter(d.get("node") or "<no node>" for d in facts["devices"]))
    if driver is not None:
        out.notes = _readiness(k8s, profile, facts)
    return out


def offline(cfg: RunConfig, registry: Registry) -> Survey:
    """The survey of ``list -o json`` without ``--kubeconfig``: no cluster and no cluster provider (a plugin-only
    install has no ``local``), decided as for a cluster the run would create (no capabilities known: the
    profile's selection). Raises ConfigError for a bad --driver (s16 new-user F4)."""
    from conformance.drivers import profiles  # noqa: PLC0415 - as Session loads it

    profile = profiles.load(cfg.driver, registry.deploy_modes())
    return Survey(cfg, profile.driver, profile.deploy_mode, True, [])


def _readiness(k8s: K8s, profile, facts: dict) -> list[str]:
    """What a preinstalled run would stop on (exit 3): a missing DeviceClass, no published slice."""
    notes = []
    try:
        check_device_classes(k8s, profile)
    except errors.DriverNotReady as exc:
        notes.append(str(exc))
    if not facts["devices"]:
        notes.append(f"no ResourceSlice of driver {profile.driver} publishes a device: the run would wait for one")
    return notes


def decision_of(item, caps: caps_mod.Capabilities | None, at_start: frozenset[str]) -> tuple[str, str]:
    """``(decision, reason)`` of a kept pytest ``item`` from the harness's :class:`selection.Decision` (stashed by
    its collection hook): a skip whose missing capabilities are all ``at_start`` is *at-start*; a skip the
    profile waives (summary.md's waiver rule) is *waived*."""
    from conformance.plugin import DECISION  # noqa: PLC0415 - the plugin imports this package

    decision = item.stash.get(DECISION, None) or selection.Decision("run")
    if decision.action != "skip" or caps is None:
        return decision.action, decision.reason
    missing = [c for m in item.iter_markers("requires") for c in m.args if not caps.has(c)]
    if missing and set(missing) <= at_start:
        return "at-start", decision.reason
    if plan_render.WAIVER.search(decision.reason):
        return "waived", decision.reason
    return "skip", decision.reason


def area_of(item) -> str:
    """The first area marker of ``item`` ("" for none)."""
    areas = {m.name for m in markers.AREAS}
    return next((m.name for m in item.iter_markers() if m.name in areas), "")


class PlanPlugin:
    """Collect-only: survey at session start, collect the harness's decisions, print them in ``mode``."""

    def __init__(self, config, mode: str) -> None:
        self.config, self.mode = config, mode
        self.survey: Survey | None = None
        self.deselected: list = []
        self.decisions: list[TestDecision] = []

    def pytest_sessionstart(self, session):
        """Survey the cluster (read-only) and give the harness the capabilities it decides skips from."""
        from conformance.plugin import HARNESS  # noqa: PLC0415

        harness = self.config.stash[HARNESS]
        cluster_free = self.mode == "json" and not harness.cfg.kubeconfig  # list -o json: no cluster named
        try:
            self.survey = (offline if cluster_free else survey)(harness.cfg, harness.registry)
        except errors.ConfigError as exc:  # pytest prints "Exit: <reason>"
            pytest.exit(f"dra-conformance: bad input: {exc}", returncode=4)
        except errors.Forbidden as exc:  # the run's user lacks a permission: the API server's message names it
            pytest.exit(
                f"dra-conformance: the run's user lacks a permission the run needs: {exc} "
                "(`dra-conformance preflight` lists every missing permission with the rule to add)",
                returncode=3,
            )
        except errors.ConformanceError as exc:
            pytest.exit(f"dra-conformance: {type(exc).__name__}: {exc}", returncode=3)
        harness.planned = self.survey.capabilities

    def pytest_collectreport(self, report):
        """A suite module that does not collect: say which and why (pytest's reporter is silenced)."""
        if report.failed:
            print(f"error: collecting {report.nodeid}: {report.longreprtext}", file=sys.stderr)

    def pytest_deselected(self, items):
        """Remember what --profile (and -k/-m) deselected."""
        self.deselected.extend(items)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        """After the harness decided: one TestDecision per kept item."""
        s = self.survey
        caps, at_start = (s.capabilities, s.at_start) if s else (None, frozenset())
        for item in items:
            decision, reason = decision_of(item, caps, at_start)
            spaces = len({"namespace", "admin_namespace"} & set(getattr(item, "fixturenames", ())))
            self.decisions.append(TestDecision(item.nodeid, area_of(item), decision, reason, spaces))

    def pytest_collection_finish(self, session):
        """Print the plan, the list or the JSON."""
        profile = self.config.getoption("profile") or selection.DEFAULT_TEST_PROFILE
        dropped = [i for i in self.deselected if not _in_profile(i, profile)]
        if self.mode == "json":
            print(plan_render.as_json(self.decisions))
        elif self.mode == "list":
            print(plan_render.listing(self.decisions, self.survey, profile, len(dropped)))
        else:
            print(plan_render.plan(self.decisions, self.survey, profile, len(dropped), len(self.deselected)))


def _in_profile(item, profile: str) -> bool:
    return markers.profile_includes(profile, selection.test_profile([m.name for m in item.iter_markers()]))


def pytest_addoption(parser):
    """``--dra-plan plan|list|json`` (set by the CLI with ``--collect-only``)."""
    parser.getgroup("dra-conformance").addoption("--dra-plan", dest="dra_plan", choices=MODES, default=None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """Register :class:`PlanPlugin` when ``--dra-plan`` is given with ``--collect-only`` and the harness is on;
    silence pytest's own collect-only listing (the plugin prints the plan, collection errors included)."""
    from conformance.plugin import HARNESS  # noqa: PLC0415

    mode = config.getoption("dra_plan", default=None)
    if mode and config.option.collectonly and HARNESS in config.stash:
        config.pluginmanager.register(PlanPlugin(config, mode), "dra_conformance_plan")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)


def collect_args(args, mode: str) -> list[str]:
    """The collect-only pytest command line of ``run --plan`` / ``list --kubeconfig`` / ``list -o json``
    (``mode``: plan | list | json) from the CLI's ``args``: the run's options, no run ID, no report directory."""
    from conformance.runner import cli  # noqa: PLC0415 - the CLI imports this module when asked for a plan

    extra = [cli.suite_arg(a) for a in (getattr(args, "pytest_args", None) or []) if a != "--"]
    extra = [a for a in extra if a not in cli.SERIAL_ONLY]
    paths = [a for a in extra if not a.startswith("-") and cli._is_path(a)]
    out = [] if paths else [str(cli.SUITES)]
    out += ["--rootdir", str(shipped.test_root()), "--collect-only", "-p", "no:cacheprovider", "-W", cli.REWRITE_NOTE]
    out += ["-p", "conformance.runner.plan", "--dra-plan", mode, *run_options.to_pytest(args)]
    if mode == "list":
        out += ["-p", "conformance.runner.listing"]
    return out + extra


def command(args, mode: str) -> int:
    """Run the collect-only pytest of :func:`collect_args` in this process and print the plan, list or JSON.
    Returns 0 (also when nothing is selected), 3 (cluster not reachable), 4 (bad input), else 1 (e.g. a suite
    that does not import). Creates nothing on the cluster and writes no report."""
    code = int(pytest.main(collect_args(args, mode)))
    return 0 if code in (0, 5) else code if code in (3, 4) else 1
