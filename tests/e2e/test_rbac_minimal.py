"""The standard profile on a cluster the run does not own, as a user bound ONLY to the minimal ClusterRole that
`preflight --print-role --node-access privileged-pod` prints (no cluster-admin; issue 27 §4): on a local cluster
with the reference driver installed from its chart as an admin would (`dra-conformance install`), `run --cluster
existing --driver-deploy preinstalled --node-access privileged-pod --profile standard` as that user, then as the
admin on the same cluster. Every test ends as it does for the admin, or skips naming the permission it lacks; a 403
that surfaces as a failure or an error is a defect of the role, the docs or the skip.

Not in ``make test`` (two standard runs, about 10-25 min under load): ``make rbac-minimal`` sets
DRA_E2E_RBAC_MINIMAL=1 and runs it; it prints passed/failed/skipped of both runs and every test that differs."""

from __future__ import annotations

import collections
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.k8s.client import K8s
from tests.e2e.existing.common import _cli, installed_reference, printed_role_kubeconfig

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.cluster_lifecycle,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DRA_E2E_RBAC_MINIMAL"), reason="two standard runs: `make rbac-minimal` runs it"
    ),
]
RUN_TIMEOUT = 2700  # s, one standard run on a loaded 2-core host (about 5 min quiet)
DENIAL = re.compile(r'cannot [a-z]+ resource "|lacks (a|the) permission|forbidden', re.I)  # what a skip must name


@pytest.fixture(scope="module")
def installed():
    """(kubeconfig, k8s): a 2-node local cluster with the reference chart installed by `dra-conformance install`
    (cluster-admin, as the cluster's admin would), removed at the end; DRA_E2E_RBAC_KUBECONFIG=PATH: the admin
    kubeconfig of a cluster already installed that way (kept)."""
    given = os.environ.get("DRA_E2E_RBAC_KUBECONFIG")
    if given:
        yield given, K8s.from_kubeconfig(given)
        return
    with installed_reference(timeout=900) as got:
        yield got


def _standard(kubeconfig: str, report: Path) -> dict[str, tuple[str, str]]:
    """The standard profile as the user of ``kubeconfig``: ``{test id: (outcome, skip or failure message)}``
    from its junit.xml; the run's exit and verdict lines under ``"<run>"``."""
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference"]
    argv += ["--driver-deploy", "preinstalled", "--node-access", "privileged-pod", "--profile", "standard"]
    proc = _cli(*argv, "--no-report", "--report-dir", str(report), timeout=RUN_TIMEOUT)
    said = proc.stdout + proc.stderr
    print(*re.findall(r"^.*privileged helper pods in .*$", said, re.M), said[-3000:], sep="\n")  # lifetime, pins
    assert (report / "junit.xml").exists(), said[-6000:]
    cases = {"<run>": (str(proc.returncode), " ".join(re.findall(r"^VERDICT: .*$", said, re.M)))}
    for case in ET.parse(report / "junit.xml").iter("testcase"):
        kids = {c.tag: c for c in case}
        bad = kids.get("failure", kids.get("error"))
        outcome = "failed" if bad is not None else "skipped" if "skipped" in kids else "passed"
        found = bad if bad is not None else kids.get("skipped")
        message = (found.get("message") or found.text or "") if found is not None else ""
        cases[f"{case.get('classname')}::{case.get('name')}"] = (outcome, message)
    return cases


def _counts(cases: dict[str, tuple[str, str]]) -> str:
    counts = collections.Counter(outcome for test, (outcome, _) in cases.items() if test != "<run>")
    return f"passed {counts['passed']}, failed {counts['failed']}, skipped {counts['skipped']}; {cases['<run>']}"


def test_the_standard_profile_with_only_the_minimal_role(installed, tmp_path):
    """As a ServiceAccount bound only to the printed ClusterRole, the standard profile ends each test as for the
    cluster admin on the same cluster, or skips it naming the missing permission. Source: issue 27 §4."""
    # given: the installed driver and a user bound only to the printed role (token valid for both runs)
    kubeconfig, k8s = installed
    with printed_role_kubeconfig(k8s, kubeconfig, tmp_path / "role.kubeconfig", expires=2 * RUN_TIMEOUT) as limited:
        # when: the standard profile runs as that user, then as the admin
        minimal = _standard(limited, tmp_path / "minimal")
    admin = _standard(kubeconfig, tmp_path / "admin")
    # then: the same outcome per test, or a skip naming the missing permission; the same exit code
    print(f"minimal role: {_counts(minimal)}\ncluster-admin: {_counts(admin)}")
    was = {t: outcome for t, (outcome, _) in admin.items()}
    differ = {t: (was.get(t, "absent"), *m) for t, m in minimal.items() if t != "<run>" and m[0] != was.get(t)}
    for test, (before, now, why) in sorted(differ.items()):
        print(f"differs: {test}: admin {before}, minimal role {now}: {why[:300]}")
    unexplained = {t: d for t, d in differ.items() if not (d[1] == "skipped" and DENIAL.search(d[2]))}
    unexplained |= {t: ("absent", "") for t in admin.keys() - minimal.keys()}
    assert not unexplained and minimal["<run>"][0] == admin["<run>"][0], (unexplained, minimal["<run>"])
