"""Shared fixtures of the project's end-to-end tests (env E2E_K8S_VERSION=1.37 picks the Kubernetes minor).

``local_cluster``: ONE real 2-node local cluster (feature_gates="all", name "e2e", logs under
reports/e2e-logs/) for the whole test session, torn down at the end. Under pytest-xdist the workers share
it: the first brings it up (under a file lock), the last one out tears it down. If the host cannot run it
(not root, missing binaries...), the fixture FAILS with the pre-flight reasons — it never skips.

`make test` runs the e2e tests in two phases: the ``cluster_lifecycle`` tests one at a time, with no other
local cluster on the host (``make test-alone``: kind's before/after host comparison sees any cluster's CNI
chains, the local cluster's lifecycle test checks the kube-proxy chains it leaves), beside the unit tests (which
start no cluster); then the rest on xdist workers (``--dist loadgroup``), among them tests that bring up a
cluster of their own in a free slot (runs, bench, cluster fault, registry rehearsal). There every test of a
module (package) with a module- (package-) scoped fixture shares one ``xdist_group``, so the fixture is made
once, and every test first takes the shared cluster, so it starts before any test's own cluster and owns the
host's kube-proxy.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.cluster import resolve_version
from conformance_lab.local.config import RUN_ROOT
from conformance_lab.local.processes import alive
from conformance_tools import e2e_order

from conformance.core.errors import ConformanceError
from conformance.runner.parallel import GroupIds

REPO = Path(__file__).resolve().parents[2]
SHARED_NAME = "e2e"
SHARED_LOGS = REPO / "reports" / "e2e-logs"
LIFECYCLE_MARK = "cluster_lifecycle"
# Kubernetes minor for every e2e cluster (default: the pinned default), e.g. E2E_K8S_VERSION=1.37
K8S_VERSION = os.environ.get("E2E_K8S_VERSION") or None


def pytest_configure(config):
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):  # the groups reach xdist's scheduler
        config.pluginmanager.register(GroupIds(), "dra_e2e_group_ids")
    config.addinivalue_line(
        "markers",
        f"{LIFECYCLE_MARK}: runs with no other local cluster on the host (make test-alone, beside the unit tests)",
    )


def _scope_group(item) -> str | None:
    """The xdist group of a test using a module- or package-scoped fixture: its module's (package's) node id."""
    info = getattr(item, "_fixtureinfo", None)
    scopes = {defs[-1].scope for defs in info.name2fixturedefs.values()} if info else set()
    if "package" in scopes:
        return str(Path(item.path).parent.relative_to(REPO))
    if "module" in scopes:
        return str(Path(item.path).relative_to(REPO))
    return None


def _unit(item) -> str:
    """The xdist work unit of ``item``: its xdist_group (names sorted, as xdist joins them), else its node ID."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name")) for m in item.iter_markers("xdist_group")})
    return "@" + "_".join(names) if names else item.nodeid


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup hook reads the xdist_group marks
def pytest_collection_modifyitems(session, config, items):
    """E2e tests sharing a module/package fixture get one xdist group (an explicit xdist_group mark wins). Then
    own-cluster lifecycle tests first, so they do not run beside the shared cluster (one kube-proxy per host owns
    the KUBE-* iptables chains); then the work units (a group, or a test) longest first by their tests' seconds in
    tests/e2e/durations.json (`make e2e-durations` refreshes it; a test it lacks counts 60 s when marked slow, 3 s
    otherwise), so the parallel phase (``--no-loadscope-reorder``) does not start a long one last (issue 26 §2)."""
    for item in items:
        if item.get_closest_marker("e2e") and not item.get_closest_marker("xdist_group"):
            group = _scope_group(item)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))
    seconds, unit_s = e2e_order.load(), {}
    for item in items:
        secs = e2e_order.expected(item.nodeid, bool(item.get_closest_marker("slow")), seconds)
        unit_s[_unit(item)] = unit_s.get(_unit(item), 0.0) + secs
    items.sort(key=lambda item: (not item.get_closest_marker(LIFECYCLE_MARK), -unit_s[_unit(item)]))


@contextmanager
def _locked():
    RUN_ROOT.mkdir(parents=True, exist_ok=True)
    with open(RUN_ROOT / f"{SHARED_NAME}.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _users(update=None) -> list[int]:
    path = RUN_ROOT / f"{SHARED_NAME}.users.json"
    try:
        users = [pid for pid in json.loads(path.read_text()) if alive(pid, None)]
    except (OSError, ValueError):
        users = []
    if update is not None:
        users = update(users)
        path.write_text(json.dumps(users))
    return users


def shared_config() -> LocalClusterConfig:
    """The config of the session's shared cluster (the lowest slot no other local cluster records)."""
    from conformance_lab.local.provider import free_slot  # noqa: PLC0415

    slot = free_slot(first=0, exclude=SHARED_NAME)
    return LocalClusterConfig(
        name=SHARED_NAME, nodes=2, feature_gates="all", log_dir=SHARED_LOGS, k8s_version=K8S_VERSION, slot=slot
    )


@pytest.fixture(scope="session")
def local_cluster():
    """The shared LocalClusterHandle (2 real nodes, all DRA gates). Fails with the reason if it cannot start."""
    me = os.getpid()
    with _locked():
        existing = None
        if _users():
            try:
                existing = LocalCluster.load(SHARED_NAME).handle
            except FileNotFoundError:
                existing = None
        if existing is None:
            try:
                LocalCluster.load(SHARED_NAME).down()  # left over from a crashed session
            except FileNotFoundError:
                pass
            try:
                existing = LocalCluster(shared_config(), progress=lambda line: print(line, flush=True)).up()
            except ConformanceError as exc:
                pytest.fail(f"the shared local cluster could not start: {exc}", pytrace=False)
        want = resolve_version(K8S_VERSION)
        if existing.k8s_version != want:
            pytest.fail(
                f"the shared cluster {SHARED_NAME!r} (used by pids {_users()}) runs Kubernetes "
                f"{existing.k8s_version}, this session wants {want}; wait for those sessions to end",
                pytrace=False,
            )
        _users(lambda users: [*users, me])
    yield existing
    with _locked():
        left = _users(lambda users: [p for p in users if p != me])
        if not left:
            LocalCluster.load(SHARED_NAME).down()
            (RUN_ROOT / f"{SHARED_NAME}.users.json").unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _shared_cluster_first(request):
    """Every e2e test but the lifecycle ones takes the shared cluster first: under xdist it then starts before
    any test's own cluster (a run's). Module and package fixtures that start a cluster (existing/'s install,
    validate-suite) are set up before this one, so they ask for ``local_cluster`` themselves."""
    if request.node.get_closest_marker("e2e") and not request.node.get_closest_marker(LIFECYCLE_MARK):
        request.getfixturevalue("local_cluster")
