"""The main job end to end, as `make conformance` runs it: `dra-conformance run --cluster local` brings up
its own local cluster, deploys the driver as its profile says (reference: host mode; dra-example-driver: its
own Helm chart as a DaemonSet), runs the standard profile and writes the report.

The reference driver is our known-good driver: every selected test must pass or skip with a capability
reason, and the verdict must be PASS (issue 5 and 6 acceptance). dra-example-driver v0.4.0 runs the
same suites and must fail exactly its known defect, no more and no less: a claim configuration naming only
the parent request of a firstAvailable list is not applied to the chosen subrequest (resource.k8s.io/v1
DeviceClaimConfiguration.requests: "If just the main request is given, the configuration applies to all
subrequests"; seen as the default TimeSlicing strategy in the container). Sources: KEP-5970 (core behaviours),
feature-catalog.md §6 (driver contract).

dra-example-driver's run also checks that nothing of its cluster is left on the host (no /var/lib/kubelet bind of
its nodes in any mount namespace, no DNAT chain, no standard CDI dir left once no other cluster runs):
test_helm_deploy's checks, merged here (the same driver deployed the same way) and narrowed to the run's own
cluster, so the two runs and other tests' clusters may run side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_lab.local import hostsys
from conformance_lab.local.state import existing_clusters

from tests.e2e.conftest import SHARED_NAME

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
KNOWN_DEFECTS = {
    "dra-example-driver": {
        "suites/prioritized_list/test_config_scope.py::"
        "test_config_for_parent_or_chosen_subrequest_reaches_container[parent-request]"
    }
}


def _run(driver: str, report: Path) -> tuple[int, str]:
    cmd = [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--cluster",
        "local",
        "--driver",
        driver,
        "--profile",
        "standard",
        "--feature-gates",
        "all",
        "--report-dir",
        str(report),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    return proc.returncode, proc.stdout + proc.stderr


def _cdi_dirs() -> list[str]:
    return [d for d in ("/run/cdi", "/etc/cdi") if Path(d).exists()]


def _traces_of(cluster: str) -> dict:
    """What a local cluster named ``cluster`` may leave on the host: pids with one of its nodes' kubelet dirs bound
    at /var/lib/kubelet (holders, kubelets, containerds; the host's own mount namespace included), its DNAT
    chain."""
    pids = []
    for info in Path("/proc").glob("[0-9]*/mountinfo"):
        try:
            lines = [ln.split() for ln in info.read_text().splitlines()]
        except OSError:
            continue
        if any(f[4] == "/var/lib/kubelet" and f"/dra-conformance/clusters/{cluster}/" in f[3] for f in lines):
            pids.append(int(info.parent.name))
    chain = hostsys.api_service_chain(cluster)
    return {"pids": pids, "chains": [c for c in hostsys.iptables_chains(("DRA-API-",)) if c.endswith("/" + chain)]}


@pytest.mark.parametrize("driver", ["reference", "dra-example-driver"])
def test_standard_profile_passes_on_the_local_cluster(driver, tmp_path):
    cdi_before = _cdi_dirs()
    code, out = _run(driver, tmp_path / "report")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    failed = {t["id"] for t in summary["tests"] if t["status"] in ("failed", "broken")}
    known = KNOWN_DEFECTS.get(driver, set())
    assert failed == known, (sorted(failed), summary["verdictReasons"], out[-4000:])
    assert (code, summary["verdict"]) == ((1, "FAIL") if known else (0, "PASS")), (code, summary["verdictReasons"])
    skipped = [t for t in summary["tests"] if t["status"] == "skipped"]
    assert all(t.get("reason") for t in skipped), skipped
    assert summary["counts"]["passed"] >= 40, summary["counts"]
    assert (tmp_path / "report" / "allure-report").is_dir() and (tmp_path / "report" / "junit.xml").is_file()
    if driver == "dra-example-driver":  # from its Helm chart: the host looks as before
        assert "deploying driver gpu.example.com (helm)" in out, out[-4000:]
        run = json.loads((tmp_path / "report" / "run.json").read_text())
        cluster = run["cluster"]["nodes"][0].rsplit("-node-", 1)[0]
        assert _traces_of(cluster) == {"pids": [], "chains": []}
        if not set(existing_clusters()) - {SHARED_NAME}:  # another cluster's nodes may need the dirs now
            assert set(_cdi_dirs()) <= set(cdi_before), cdi_before
