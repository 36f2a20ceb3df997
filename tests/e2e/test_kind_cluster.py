"""`--cluster kind` end to end: `dra-conformance run --cluster kind` creates a kind cluster (1 control plane +
1 worker; nerdctl over our own containerd on a host where Docker cannot run privileged containers, with the
node image built offline), deploys the reference driver from its Helm chart, qualifies it with the `core`
profile, deletes the cluster, and leaves nothing on the host: no container of ours, no kind/nerdctl network
interface, no mount or process of our containerd, no iptables rule or chain of ours, the recorded sysctls
unchanged. Sources: issue 15; shared/reference/kind-offline.md ("Host side effects", "Cleanup").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_lab.kind import host as kindhost

# cluster_lifecycle: alone on the host (its before/after comparison of links, rules and sysctls sees any cluster)
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.cluster_lifecycle]
REPO = Path(__file__).resolve().parents[2]
OUR_LINK = re.compile(r"^(nerdctl\d+|br-[0-9a-f]{12})$")


def _host() -> dict:
    """What a kind run may leave behind, in comparable form."""
    mounts = [
        ln for ln in Path("/proc/mounts").read_text().splitlines() if "dra-conformance-kind" in ln or "/kind/" in ln
    ]
    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(kindhost.RUN) in cmdline or f"-namespace {kindhost.NAMESPACE} " in cmdline:
            procs.append(cmdline)
    rules = []
    for cmd in ("iptables-save", "ip6tables-save"):
        out = subprocess.run([cmd], capture_output=True, text=True).stdout
        rules += [ln for ln in out.splitlines() if f"{kindhost.NAMESPACE}-" in ln or "CNI-HOSTPORT" in ln]
        rules += [f"{cmd} {ln.split()[0]}" for ln in out.splitlines() if kindhost.PER_CONTAINER.match(ln[1:])]
    return {
        "links": sorted(n for n in os.listdir("/sys/class/net") if OUR_LINK.match(n)),
        "mounts": mounts,
        "processes": procs,
        "rules": rules,
        "sysctls": kindhost.sysctls(kindhost.RESTORED_SYSCTLS),
        "cgroups": sorted(str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{kindhost.NAMESPACE}")),
    }


def test_kind_cluster_qualifies_the_reference_chart_and_leaves_nothing(tmp_path):
    # given: the host before the run
    before = _host()
    report = tmp_path / "report"
    cmd = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "kind", "--nodes", "1", "--driver", "reference",
           "--driver-deploy", "helm", "--profile", "core", "--report-dir", str(report), "--no-report"]  # fmt: skip
    # when: a kind run qualifies the reference driver deployed from its chart
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    # then: every core test passed, and the host is as before
    full = REPO / "reports" / "e2e-logs" / "test_kind_cluster.out"  # kept: a failure's whole output (INTERNALERROR)
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(proc.stdout + proc.stderr)
    out = f"(whole output: {full})\n" + (proc.stdout + proc.stderr)[-4000:]
    results = [json.loads(p.read_text()) for p in (report / "allure-results").glob("*-result.json")]
    statuses = {r["status"] for r in results}
    bad = [  # each test that did not pass or skip, with the start of its message (the output's tail may miss it)
        f"{r['name']} {r['status']}: {((r.get('statusDetails') or {}).get('message') or '')[:1500]}"
        for r in results
        if r["status"] not in ("passed", "skipped")
    ]
    assert proc.returncode == 0 and results and not bad, (proc.returncode, statuses, bad, out)
    assert _host() == before, ((report / "kind-host-cleanup.txt").read_text(), out)
