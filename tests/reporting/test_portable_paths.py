"""run.json and summary.json name no path of the machine that ran (issue 22 §5): the report directory, the
user's cwd, the installed package and the home directory become relative or ``~``."""

import json
from pathlib import Path

from conformance.core import capabilities, portable
from conformance.core.config import RunConfig
from conformance.runner import narrowing
from conformance.runner import session as session_mod
from conformance.runner.registry import Registry
from tests.reporting.conftest import REPO, run_sample

from conformance.clusters import builtin as builtin_clusters  # isort: skip
from conformance.drivers import builtin as builtin_drivers  # isort: skip


def _registry() -> Registry:
    registry = Registry()
    registry.add_hook_result("cluster provider", builtin_clusters.pytest_dra_cluster_providers(), "builtin-clusters")
    registry.add_hook_result("driver deployer", builtin_drivers.pytest_dra_driver_deployers(), "builtin-drivers")
    return registry


def _machine_paths(text: str, *prefixes: Path) -> list[str]:
    return [str(p) for p in prefixes if str(p) in text]


def test_run_json_and_summary_json_name_no_machine_path(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    run_dir = work / "reports" / "r1"
    run_dir.mkdir(parents=True)
    # what a run really records: the profile's evidence names its file (the package's path), the narrowing its
    # path arguments (under the cwd), a capability an evidence file (under the report dir) and the home kubeconfig
    (run_dir / narrowing.FILE).write_text(json.dumps({"select": [str(work / "suites" / "node")], "selected": 1}))
    cfg = RunConfig(cluster="existing", driver="reference", run_id="r1", report_dir=str(run_dir))
    session = session_mod.Session(cfg, run_dir, _registry())
    caps = capabilities.evaluate({"devices": [], "served_versions": {}}, session.profile).as_dict()
    caps["node_access"] = {"available": False, "evidence": f"no kubeconfig at {home}/.kube/config; see {run_dir}/x.log"}
    session.capabilities = capabilities.Capabilities.from_dict(caps)
    raw = json.dumps(session.capabilities.as_dict())
    assert str(REPO) in raw and str(home) in raw and str(run_dir) in raw  # the probe: the inputs carry paths
    session.write_run_json(finished=1.0)
    run_json = (run_dir / "run.json").read_text()
    assert _machine_paths(run_json, run_dir, work, home, tmp_path, REPO) == []
    record = json.loads(run_json)
    assert record["narrowing"]["select"] == ["./suites/node"]
    assert record["capabilities"]["node_access"]["evidence"] == "no kubeconfig at ~/.kube/config; see ./x.log"
    assert "profile reference (reference.yaml)" in run_json  # the profile named by its file
    run_sample(run_dir, run_json=record, fail=False)
    from conformance.reporting import build  # noqa: PLC0415 - the report stack

    build.generate(run_dir, html_report=False)
    summary = (run_dir / "summary.json").read_text()
    assert json.loads(summary)["reportId"] == "r1"
    assert _machine_paths(summary, run_dir, work, home, tmp_path, REPO) == []


def test_scrub_matches_whole_path_components_only():
    prefixes = [("/srv/run", "."), ("/home/u", "~")]
    assert portable.scrub(["/srv/run", "/srv/run/a", "/srv/runner/a", "x /home/u/.kube"], prefixes) == [
        ".",
        "./a",
        "/srv/runner/a",
        "x ~/.kube",
    ]
    assert portable.scrub({"/home/u/k": 1, "n": 2.5}, prefixes) == {"~/k": 1, "n": 2.5}
