"""`run --plan` and a driver-aware `list` on an existing cluster (issue 22 §2): what a run would do, decided
read-only, creating nothing; the decisions are those the run then makes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.k8s.client import K8s
from tests.e2e.existing.common import (
    REPO,
    _outcomes,
)

pytestmark = pytest.mark.e2e


PLAN_ROW = re.compile(r"^  (run|skip|waived|fail|at-start) +(\S+)(?:  -- (.*))?$", re.M)


def _in(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """``dra-conformance ARGV`` run from ``cwd`` (to see that it writes nothing there)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "conformance.cli", *argv]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def _cluster_state(k8s: K8s) -> dict:
    """Namespaces, pods, ResourceClaims and ResourceSlices by kind, namespace and name -> (uid, generation): an
    object created, deleted or re-created changes the set. The probe must find namespaces, pods and slices (an
    empty listing is an error, never an equal "before" and "after")."""
    state = {}
    for kind in ("Namespace", "Pod", "ResourceClaim", "ResourceSlice"):
        objs = k8s.list(kind, None) if kind in ("Pod", "ResourceClaim") else k8s.list(kind)
        state[kind] = {(o.namespace, o.name): (o.uid, o.get("metadata.generation")) for o in objs}
    assert state["Namespace"] and state["Pod"] and state["ResourceSlice"], state
    return state


def test_plan_names_nodes_and_decisions_and_creates_nothing(installed, tmp_path):
    # given: the cluster with the driver installed, its objects now, an empty working directory
    kubeconfig, k8s = installed
    before = _cluster_state(k8s)
    nodes = [n.name for n in k8s.list("Node")]
    # when: a run is asked for its plan
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--plan"]
    proc = _in(tmp_path, *argv, "--profile", "standard")
    out = proc.stdout + proc.stderr
    # then: exit 0, both nodes named, a skip with its evidence, the counts; nothing created, nothing written
    assert proc.returncode == 0 and "PLAN of `dra-conformance run`" in proc.stdout, out[-6000:]
    assert len(nodes) == 2 and all(n in proc.stdout for n in nodes), out[-6000:]
    assert "deploy mode preinstalled" in proc.stdout, out[-6000:]
    rows = PLAN_ROW.findall(proc.stdout)
    skips = [(test, why) for decision, test, why in rows if decision == "skip"]
    assert skips and all(why for _, why in skips), out[-6000:]
    # the driver's own ResourceSlices are never deleted on a cluster whose admin installed it (issue 22 §1)
    republish = [why for test, why in skips if "test_deleted_slice_is_republished" in test]
    assert republish and "installed by the cluster's admin" in republish[0], out[-6000:]
    counted = re.search(r"tests \(profile standard\): (\d+) selected: (\d+) run, (\d+) skip", proc.stdout)
    assert counted and int(counted[1]) == len(rows) and int(counted[3]) == len(skips), out[-6000:]
    assert int(counted[2]) == sum(1 for d, _, _ in rows if d == "run") > 0, out[-6000:]
    assert _cluster_state(k8s) == before
    assert list(tmp_path.iterdir()) == []
    # when: the same profile is listed on the cluster, as JSON
    listed = _in(
        tmp_path, "list", "--driver", "reference", "--profile", "standard", "--kubeconfig", kubeconfig, "-o", "json"
    )
    # then: it parses and agrees with the plan test by test (decision and evidence), and wrote nothing either
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    doc = json.loads(listed.stdout)
    assert {d["id"]: (d["decision"], d["reason"]) for d in doc} == {t: (d, w) for d, t, w in rows}
    assert {d["area"] for d in doc} >= {"api_v1", "allocation", "node"}
    assert list(tmp_path.iterdir()) == []
    assert _cluster_state(k8s) == before


def test_plan_decisions_are_what_the_run_then_does(installed, tmp_path):
    # given: the plan of a standard run on the cluster; one test it would run and one it would skip
    kubeconfig, k8s = installed
    base = ["--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--profile", "standard"]
    planned = _in(tmp_path, "run", *base, "--plan")
    rows = {test: (decision, why) for decision, test, why in PLAN_ROW.findall(planned.stdout)}
    assert planned.returncode == 0 and rows, planned.stdout[-3000:] + planned.stderr[-3000:]
    ran = next(t for t, (d, _) in rows.items() if d == "run" and t.startswith("suites/smoke/") and "[" not in t)
    skipped = next(t for t, (d, _) in rows.items() if d == "skip" and "[" not in t)
    # when: the run runs those two tests
    report = tmp_path / "report"
    argv = ["run", *base, "--workers", "0", "--no-report", "--report-dir", str(report), "--", ran, skipped]
    proc = _in(tmp_path, *argv)
    out = proc.stdout + proc.stderr
    # then: one passed, the other skipped with the plan's evidence
    assert proc.returncode == 0, out[-6000:]
    assert _outcomes(report / "junit.xml") == {ran.split("::")[-1]: "passed", skipped.split("::")[-1]: "skipped"}
    messages = [s.get("message") or "" for s in ET.parse(report / "junit.xml").iter("skipped")]
    assert len(messages) == 1 and rows[skipped][1] in messages[0], (messages, rows[skipped])
