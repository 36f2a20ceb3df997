"""`run --plan` and the driver-aware `list` (issue 22 §2): the read-only survey, the decisions taken from the
harness and their rendering. The cluster is faked here (tests/e2e/existing/test_plan.py runs them on one)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.clusters import builtin as builtin_clusters
from conformance.core import capabilities, errors, selection
from conformance.core.config import RunConfig
from conformance.drivers import builtin as builtin_drivers
from conformance.plugin import DECISION
from conformance.runner import cli, plan, plan_render
from conformance.runner.registry import Registry

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def _registry() -> Registry:
    registry = Registry()
    registry.add_hook_result("cluster provider", builtin_clusters.pytest_dra_cluster_providers(), "builtin-clusters")
    registry.add_hook_result("driver deployer", builtin_drivers.pytest_dra_driver_deployers(), "builtin-drivers")
    registry.add_entry_points()
    return registry


class _Item:
    """A collected test: marker names, requires(...) capabilities and the harness's stashed decision."""

    def __init__(self, nodeid: str, marks: tuple[str, ...], requires: tuple[str, ...], decision: selection.Decision):
        self.nodeid = nodeid
        self._marks = [SimpleNamespace(name=m, args=()) for m in marks]
        self._marks += [SimpleNamespace(name="requires", args=requires)] if requires else []
        self.stash = {DECISION: decision}

    def iter_markers(self, name=None):
        return iter([m for m in self._marks if name is None or m.name == name])


def _caps(**available: bool) -> capabilities.Capabilities:
    return capabilities.Capabilities(
        {n: capabilities.Capability(n, ok, f"{n} evidence") for n, ok in available.items()}
    )


def test_a_skip_on_a_capability_only_a_started_run_probes_is_at_start_and_an_opt_out_is_waived():
    caps = _caps(node_access=False, multi_node=False, **{"driver.cdi": False})
    skip = selection.Decision("skip", "node_access not available: decided when the run starts: ...")
    waived = selection.Decision("skip", "driver.cdi not available: profile p (p.yaml) declares cdi: false (...)")
    at_start = frozenset({"node_access"})
    assert plan.decision_of(_Item("a", ("node",), ("node_access",), skip), caps, at_start) == ("at-start", skip.reason)
    both = _Item("b", ("node",), ("node_access", "multi_node"), skip)
    assert plan.decision_of(both, caps, at_start) == ("skip", skip.reason)  # one missing capability is known now
    assert plan.decision_of(_Item("c", ("node",), ("driver.cdi",), waived), caps, at_start)[0] == "waived"
    broken = selection.Decision("fail", "driver.partitions declared but not delivered: no slice ...")
    assert plan.decision_of(_Item("d", (), ("driver.partitions",), broken), caps, at_start) == ("fail", broken.reason)
    assert plan.decision_of(_Item("e", ("allocation",), (), selection.Decision("run")), caps, at_start) == ("run", "")
    assert plan.area_of(_Item("e", ("standard", "allocation", "node"), (), selection.Decision("run"))) == "allocation"


def _decisions() -> list[plan.TestDecision]:
    return [
        plan.TestDecision("suites/a.py::t1", "allocation", "run", "", 1),
        plan.TestDecision("suites/a.py::t2", "node", "skip", "node_access not available: no node access", 1),
        plan.TestDecision("suites/a.py::t3", "admin_access", "run", "", 2),
        plan.TestDecision("suites/a.py::t4", "node", "waived", "declares cdi: false", 0),
    ]


def test_counts_rows_and_json_say_every_decision_with_its_evidence():
    decisions = _decisions()
    assert plan_render.counts(decisions) == {"run": 2, "skip": 1, "waived": 1, "fail": 0, "at-start": 0}
    line = plan_render.count_line(decisions, "standard", 30, 2)
    assert line.startswith("tests (profile standard): 4 selected: 2 run, 1 skip, 1 waived, 0 fail")
    assert line.endswith("30 deselected by the profile, 2 by pytest arguments (-k, -m)")
    doc = json.loads(plan_render.as_json(decisions))
    assert doc[1] == {"id": "suites/a.py::t2", "area": "node", "decision": "skip", "reason": decisions[1].reason}
    text = plan_render.listing(decisions, None, "standard", 30)
    assert "  skip    suites/a.py::t2  -- node_access not available: no node access" in text.splitlines()


def _survey(**fields) -> plan.Survey:
    cfg = RunConfig(cluster="existing", node_access="privileged-pod", run_id="r1", report_dir="/tmp/r")
    base = plan.Survey(cfg, "gpu.example.com", "preinstalled", False, ["n1", "n2"], "https://api:6443", "v1.34.4")
    return dataclasses.replace(base, **fields)


def test_the_plan_names_cluster_nodes_helper_pods_objects_and_what_would_stop_the_run():
    survey = _survey(driver_nodes={"n1": 2, "n2": 2}, helper="one privileged helper pod per node in namespace x")
    survey.notes = ["DeviceClass gpu.example.com does not exist"]
    text = plan_render.plan(_decisions(), survey, "standard", 30, 30)
    assert "cluster      existing: https://api:6443, Kubernetes v1.34.4" in text
    assert "nodes        n1, n2" in text and "driver nodes n1 (2 device(s)), n2 (2 device(s))" in text
    assert "deploy mode preinstalled: installs nothing" in text
    assert "privileged-pod: one privileged helper pod per node in namespace x, on n1, n2" in text
    # a namespace for each test that runs and uses one (t1, t3; t2 is skipped), t3 with an admin-access one
    assert "a namespace per test for 2 test(s) (1 with a second, admin-access one)" in text
    assert "WOULD STOP   DeviceClass gpu.example.com does not exist (exit 3)" in text
    assert "30 deselected by the profile;" not in text and "30 deselected by the profile" in text
    owned = dataclasses.replace(survey, owned=True, cfg=RunConfig(cluster="local"), nodes=["2 node(s) of a new"])
    assert "capabilities known after `cluster up`" in plan_render.plan([], owned, "core", 0, 0)
    assert "(nothing selected: the run would exit 5)" in plan_render.plan([], owned, "core", 0, 0)


class _Cluster:
    kubeconfig = Path("/nonexistent/kubeconfig")
    nodes = [SimpleNamespace(name="n1"), SimpleNamespace(name="n2")]
    feature_gates: dict = {}
    images = {"busybox": "busybox:1.36"}


class _K8s:
    host = "https://api"

    def unguarded(self):
        return self


def test_survey_of_an_existing_cluster_reads_and_marks_what_only_a_started_run_probes(monkeypatch):
    # given: an existing cluster (faked: provider, client, facts) publishing devices on both nodes
    seen = {}
    devices = [{"node": n, "pool": n, "device": f"d{i}", "attributes": {}} for n in ("n1", "n2") for i in (0, 1)]

    def collect(k8s, profile, *, cluster, node_access, driver):
        seen.update(node_access=node_access, driver=driver)
        facts = {"served_versions": {"v1": []}, "devices": devices, "k8s_version": "v1.34.4"}
        return facts | {"nodes": [{"name": "n1"}, {"name": "n2"}]}

    monkeypatch.setattr(plan.Session, "_provider", lambda self: SimpleNamespace(up=_Cluster))
    monkeypatch.setattr(plan.kubeconfig, "resolve", lambda path, ctx: SimpleNamespace(describe=lambda: "kc"))
    monkeypatch.setattr(plan.K8s, "from_kubeconfig", lambda kube, **kw: _K8s())
    monkeypatch.setattr(plan.facts_mod, "collect", collect)
    monkeypatch.setattr(plan, "check_device_classes", lambda k8s, profile: None)
    cfg = RunConfig(cluster="existing", driver="reference", node_access="privileged-pod", run_id="r9")
    # when: surveyed
    survey = plan.survey(cfg, _registry())
    # then: no node access started, the preinstalled handle, the helper pods' checks decided at the start
    assert seen["node_access"] is None and seen["driver"].deploy_mode == "preinstalled"
    assert survey.deploy_mode == "preinstalled" and not survey.owned and survey.notes == []
    assert survey.nodes == ["n1", "n2"] and survey.driver_nodes == {"n1": 2, "n2": 2}
    assert survey.at_start == frozenset(plan.NODE_PROBED) and "namespace dra-node-access-r9" in survey.helper
    assert not survey.capabilities.has("node_access")
    assert "decided when the run starts" in survey.capabilities.evidence("node_access")
    assert survey.capabilities.has("multi_node")


def test_list_json_without_a_cluster_lists_what_list_lists(capsys, monkeypatch, tmp_path):
    # given: an empty working directory
    monkeypatch.chdir(tmp_path)
    args = SimpleNamespace(driver="reference", profile="core", allow_disruptive=False, kubeconfig=None, context=None)
    # when: listed as JSON (no cluster: decisions from the profile alone)
    assert cli.list_command(SimpleNamespace(**vars(args), output="json")) == 0
    doc = json.loads(capsys.readouterr().out)
    # then: every core test, each "run", and nothing written
    assert doc and {d["decision"] for d in doc} == {"run"} and all(d["id"].startswith("suites/") for d in doc)
    assert cli.list_command(SimpleNamespace(**vars(args), output="text")) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("suites/")]
    assert listed == [d["id"] for d in doc]
    assert list(tmp_path.iterdir()) == []


def test_list_json_without_the_lab_needs_no_cluster_provider(capsys, monkeypatch, tmp_path):
    """s16 new-user F4: on a plugin-only install (no `local` provider) `list -o json` failed with "--cluster:
    unknown cluster provider 'local'" (exit 4) though the user named no cluster and a listing needs none."""
    import importlib.metadata  # noqa: PLC0415

    from conformance.runner import registry as registry_mod  # noqa: PLC0415

    every = importlib.metadata.entry_points

    def without_lab(**kw):
        return [ep for ep in every(**kw) if ep.name not in registry_mod.LAB_PROVIDERS]

    monkeypatch.setattr(importlib.metadata, "entry_points", without_lab)
    with pytest.raises(errors.ConfigError, match="unknown cluster provider 'local'"):  # the lab is really gone
        _registry().cluster_provider("local")
    monkeypatch.chdir(tmp_path)
    args = SimpleNamespace(driver="reference", profile="core", allow_disruptive=False, kubeconfig=None, context=None)
    assert cli.list_command(SimpleNamespace(**vars(args), output="json")) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc and {d["decision"] for d in doc} == {"run"} and "unknown cluster provider" not in captured.err
    assert list(tmp_path.iterdir()) == []


def test_plan_of_a_cluster_the_run_creates_says_so_and_writes_nothing(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    parser = cli.argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", "--plan", "--cluster", "local", "--profile", "core", "--", "-k", "smoke"])
    assert cli.run_command(args) == 0
    out = capsys.readouterr().out
    assert "local: created by the run" in out and "capabilities known after `cluster up`" in out
    counted = re.search(
        r"tests \(profile core\): 2 selected: 2 run, .*; (\d+) deselected by the profile, (\d+) by", out
    )
    # the profile deselects every test outside core, -k the other core tests
    full = dict(driver="reference", allow_disruptive=True, kubeconfig=None, context=None, output="json")
    cli.list_command(SimpleNamespace(**full, profile="disruptive"))
    every = len(json.loads(capsys.readouterr().out))
    cli.list_command(SimpleNamespace(**full, profile="core"))
    core = len(json.loads(capsys.readouterr().out))
    assert counted and (int(counted[1]), int(counted[2])) == (every - core, core - 2), out[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_a_bad_option_of_the_plan_is_bad_input(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    parser = cli.argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", "--plan", "--cluster", "existing", "--driver-deploy", "helm"])
    assert cli.run_command(args) == 4
    assert "--allow-install" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_refused_read_stops_the_plan_naming_the_permission(capsys, monkeypatch, tmp_path):
    # given: a user the API server refuses to list nodes (a namespaced Role only)
    monkeypatch.chdir(tmp_path)
    refused = 'nodes is forbidden: User "system:serviceaccount:ns:runner" cannot list resource "nodes"'

    def forbidden(cfg, registry):
        raise errors.Forbidden(403, "Forbidden", refused, request="GET /api/v1/nodes")

    monkeypatch.setattr(plan, "survey", forbidden)
    parser = cli.argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", "--plan", "--cluster", "existing", "--kubeconfig", "k"])
    # when: the plan is asked for; then: exit 3, the refusal and preflight named, nothing written
    assert cli.run_command(args) == 3
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "lacks a permission" in said and 'cannot list resource "nodes"' in said and "preflight" in said, said
    assert list(tmp_path.iterdir()) == []
