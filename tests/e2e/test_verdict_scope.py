"""No PASS by omission (issue 24 §1, acceptance) on the shared local cluster with the reference driver preinstalled
under a fresh name: a copy of its profile with ``admin_access: false`` passes with the waiver named on the verdict
line; a copy with ``prioritized_list`` and ``opaque_config`` removed still runs (and passes) those tests. The
third, DRAAdminAccess off giving ``PASS (not qualified: admin_access)``, on a 1-node local cluster of its own whose
gates are the shared cluster's but DRAAdminAccess=false (the unit form: tests/reporting/test_scope.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.provider import free_slot
from conformance_lab.local.state import SlotTaken

from tests.e2e.conftest import K8S_VERSION, REPO
from tests.e2e.preinstalled import reference_driver, start_run

pytestmark = pytest.mark.e2e
RUN_ARGS = ("--workers", "0", "--no-report")
EXECUTED = "suites/prioritized_list/test_first_available.py::test_first_subrequest_is_chosen_when_it_fits"


def _copy(profile: Path, **change) -> Path:
    """A copy of the preinstalled driver's profile (same file stem: a profile's name) with capabilities changed
    (None: the key removed), in a folder of its own."""
    raw = yaml.safe_load(profile.read_text())
    for key, value in change.items():
        raw["capabilities"].pop(key, None)
        if value is not None:
            raw["capabilities"][key] = value
    folder = profile.parent / "-".join(sorted(change))
    folder.mkdir()
    path = folder / profile.name
    path.write_text(yaml.safe_dump(raw))
    return path


def _tests(report: Path) -> dict[str, str]:
    """{test name: status} of the run (summary.json of its report directory)."""
    from conformance.reporting import summary  # noqa: PLC0415

    return {t["name"]: t["status"] for t in summary.build(report)["tests"]}


def test_waiver_and_removed_keys(local_cluster, tmp_path):
    """Given the reference driver preinstalled, when its profile says admin_access: false, then the admin tests
    skip and the run passes naming the waiver; when prioritized_list and opaque_config are removed, then their
    tests still run and pass."""
    with reference_driver(local_cluster, tmp_path / "driver") as (profile, _k8s):
        waived = _copy(profile, admin_access=False)
        selection = ("suites/admin_access", EXECUTED)  # a run in which no test executed is a FAIL of its own
        proc = start_run(
            local_cluster, waived, tmp_path / "waived", *selection, run_args=RUN_ARGS, test_profile="standard"
        )
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out[-6000:]
        verdict = next(line for line in out.splitlines() if line.startswith("VERDICT:"))
        assert verdict.startswith("VERDICT: PASS (") and "waived: admin_access" in verdict, verdict
        print(verdict)  # shown with -s
        statuses = _tests(tmp_path / "waived")  # the admin tests skip, the prioritized-list one passes
        assert list(statuses.values()).count("passed") == 1 and len(statuses) > 2, statuses

        removed = _copy(profile, prioritized_list=None, opaque_config=None)
        selection = ("suites/prioritized_list", "-k", "first_subrequest_is_chosen or unchosen_subrequest")
        proc = start_run(
            local_cluster, removed, tmp_path / "removed", *selection, run_args=RUN_ARGS, test_profile="standard"
        )
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-6000:]
        statuses = _tests(tmp_path / "removed")  # one prioritized-list test, one that needs the opaque config
        assert len(statuses) == 2 and set(statuses.values()) == {"passed"}, statuses
        run = json.loads((tmp_path / "removed" / "run.json").read_text())
        for name in ("driver.prioritized_list", "driver.opaque_config"):
            assert run["capabilities"][name]["available"], run["capabilities"][name]


@pytest.fixture
def admin_gate_off_cluster():
    """A 1-node local cluster (every DRA gate on, as the shared cluster, but DRAAdminAccess=false) in a free slot
    of its own (another starting at once takes it: the next free one); torn down after the test."""
    for _attempt in range(3):
        slot = free_slot()
        name = f"noadmin{slot}"
        config = LocalClusterConfig(
            name=name,
            nodes=1,
            slot=slot,
            feature_gates="all",
            extra_feature_gates={"DRAAdminAccess": False},
            k8s_version=K8S_VERSION,
            log_dir=REPO / "reports" / "e2e-logs" / name,
        )
        try:
            handle = LocalCluster(config, progress=print).up()
            break
        except SlotTaken:
            continue
    else:
        pytest.fail("no free local cluster slot in 3 tries", pytrace=False)
    try:
        yield handle
    finally:
        LocalCluster.load(name).down()


def test_admin_access_gate_off_gives_pass_not_qualified(admin_gate_off_cluster, tmp_path):
    """Given the reference driver (admin_access declared) on a cluster with DRAAdminAccess off, when the admin tests
    run beside one that executes, then they skip with the gate's evidence, the run exits 0 and its verdict line
    says ``not qualified: admin_access`` (no waiver), summary.json's ``notQualified`` names it and the scope box
    lists the gate as not testable on this cluster with the flag that enables it. Source: issue 24 §1."""
    report = tmp_path / "report"
    with reference_driver(admin_gate_off_cluster, tmp_path / "driver") as (profile, _k8s):
        proc = start_run(
            admin_gate_off_cluster, profile, report, "suites/admin_access", EXECUTED, run_args=RUN_ARGS,
            test_profile="standard",
        )  # fmt: skip
        out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-6000:]
    verdict = next(line for line in out.splitlines() if line.startswith("VERDICT:"))
    # the parts after it name what this preinstalled profile gives nothing to test with (breaker s15 C9)
    assert verdict.startswith("VERDICT: PASS (") and "; not qualified: admin_access" in verdict, verdict
    assert "waived" not in verdict, verdict
    print(verdict)  # shown with -s
    from conformance.reporting.build import generate  # noqa: PLC0415

    generate(report, html_report=False, link_latest=False)  # summary.json and summary.md, as a run without --no-report
    data = json.loads((report / "summary.json").read_text())
    assert data["notQualified"] == ["admin_access"] and data["waived"] == [], data["verdictLine"]
    assert "prioritized_list" in data["qualifiedAreas"], data["qualifiedAreas"]
    skipped = [t for t in data["tests"] if "admin_access" in t["id"]]
    assert skipped and all(t["status"] == "skipped" for t in skipped), skipped
    box = next(line for line in (report / "summary.md").read_text().splitlines() if "Not testable on this" in line)
    assert "gate.DRAAdminAccess (feature gate off: enable DRAAdminAccess" in box, box
