"""The existing-cluster path, as on a real GPU cluster: `dra-conformance install` brings up a 2-node local
cluster with the reference driver installed from its Helm chart (a DaemonSet) and leaves it running; a run with
``--cluster existing --kubeconfig ... --node-access privileged-pod --driver-deploy preinstalled`` then checks
registration (GetInfo through the helper pods' gRPC relay), a CDI spec, PodResources, the DRAPlugin service and a
pod with a device. Each selected test passes, as on ``--cluster local --driver-deploy helm``; afterwards the helper
pods are gone and the driver's DaemonSet, DeviceClass and slices are untouched; a Ctrl-C while a test runs (the
held test of interrupt_suite/held.py) ends the run with exit 2 and removes the helper pods too; the disruptive
profile is refused without ``--allow-disruptive`` before anything is created. Never touching a customer's driver
(issue 22 §1): a run with no ``--driver-deploy`` checks the installed driver (preinstalled) and leaves its Helm
release (the release Secrets, the DaemonSet: uid, resourceVersion, generation) as it was; ``--allow-install
--driver-deploy helm`` exits 4 naming the release that exists, and changes nothing either. About 4 minutes on an
idle 2-core machine; 6.5 minutes measured at a 1-min load of about 30. At the end (issue 22 §2): `preflight`
(all ok as admin; a namespaced Role's and an admission policy's refusals named) and `cleanup` of a killed run."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from kubernetes import client as kclient

from conformance.core import errors, names
from conformance.core.objects import Obj
from conformance.k8s import namespaces, sweep, waits
from conformance.k8s.client import K8s
from conformance.node.helper_pod import helper_namespace, helper_pod
from tests.e2e.preinstalled import WatchedRun

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
HELD = Path(__file__).parent / "interrupt_suite" / "held.py"  # its test waits until released
DRIVER = "gpu.dra-conformance.test"  # fixtures/drivers/reference.yaml
RELEASE = NAMESPACE = "dra-reference-driver"  # its deploy_alternatives.helm: release and namespace
SELECTED = {  # test -> the outcome of `--cluster local --driver-deploy helm` (all pass there)
    "test_driver_registers_with_every_kubelet": "passed",
    "test_registration_socket_advertises_the_v1_service": "passed",
    "test_cdi_spec_exists_while_prepared_and_is_removed_after": "passed",
    "test_list_reports_the_claim_for_the_referencing_container_only": "passed",
    "test_repeated_prepare_returns_the_same_devices_and_cdi_ids": "passed",
    "test_pod_with_claim_runs_and_sees_its_device": "passed",
}


def _cli(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def installed():
    """(kubeconfig, k8s): a local cluster with the reference chart installed, removed at the end."""
    proc = _cli("install", "--driver", "reference", "--driver-deploy", "helm", "--nodes", "2")
    out = proc.stdout + proc.stderr
    name = re.search(r"cluster down --name (\S+)", out)
    try:
        assert proc.returncode == 0 and name, out[-4000:]
        kubeconfig = re.search(r"^kubeconfig: (\S+)$", out, re.M).group(1)
        yield kubeconfig, K8s.from_kubeconfig(kubeconfig)
    finally:
        if name:
            _cli("cluster", "down", "--name", name.group(1))


def _driver_objects(k8s: K8s) -> dict:
    """The driver's installed objects by identity and spec version (uid, metadata.generation): an object nobody
    deleted or modified keeps both (status updates do not count)."""
    ds = [o for o in k8s.list("DaemonSet", None) if o.namespace == NAMESPACE]
    slices = [s for s in k8s.list("ResourceSlice") if s.get("spec.driver") == DRIVER]
    classes = [k8s.get("DeviceClass", DRIVER)]
    return {(o.kind, o.name): (o.uid, o.get("metadata.generation")) for o in ds + slices + classes}


def _release(k8s: K8s) -> dict:
    """The driver's Helm release as it stands: its release Secrets (``owner=helm,name=<release>``) and the
    DaemonSets of its namespace, each by uid, resourceVersion and generation (a write of any kind, status
    included, changes the resourceVersion). An empty probe is an error, never an equal "before" and "after"."""
    query = {"labelSelector": f"owner=helm,name={RELEASE}"}
    secrets = k8s.get_json(f"/api/v1/namespaces/{NAMESPACE}/secrets", query)["items"]
    found = {("Secret", s["metadata"]["name"]): _identity(s["metadata"]) for s in secrets}
    found |= {("DaemonSet", d.name): _identity(d.get("metadata")) for d in k8s.list("DaemonSet", NAMESPACE)}
    kinds = sorted({kind for kind, _ in found})
    assert kinds == ["DaemonSet", "Secret"], f"the probe did not find release {RELEASE} in {NAMESPACE}: {found}"
    return found


def _identity(meta: dict) -> tuple:
    return meta["uid"], meta["resourceVersion"], meta.get("generation")


def _outcomes(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        kids = {c.tag for c in case}
        out[case.get("name")] = (
            "failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed"
        )
    return out


def test_existing_cluster_run_matches_local_and_touches_nothing_else(installed, tmp_path):
    # given: a cluster with the driver installed by its chart, and its objects now
    kubeconfig, k8s = installed
    before = _driver_objects(k8s)
    # when: the existing-cluster path runs the selected node and pod tests (xdist workers use the helper pods)
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference"]
    argv += ["--driver-deploy", "preinstalled", "--node-access", "privileged-pod", "--profile", "standard"]
    argv += ["--workers", "2", "--no-report", "--report-dir", str(tmp_path), "--", "-k", " or ".join(SELECTED)]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: each test has its local-run outcome, no helper pod or run namespace is left, the driver is untouched
    assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-6000:]
    assert _outcomes(tmp_path / "junit.xml") == SELECTED, out[-6000:]
    left = [ns.name for ns in k8s.list("Namespace") if names.RUN_LABEL in (ns.get("metadata.labels") or {})]
    assert left == [], left
    assert not [p for p in k8s.list("Pod", None) if p.name.startswith("helper-")]
    assert _driver_objects(k8s) == before


def _existing_run(kubeconfig: str, report: Path, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "conformance.cli", "run", "--cluster", "existing", "--kubeconfig", kubeconfig]
    argv += ["--driver", "reference", "--driver-deploy", "preinstalled", "--node-access", "privileged-pod"]
    return argv + ["--profile", "core", "--workers", "0", "--no-report", "--report-dir", str(report), "--", *extra]


def test_ctrl_c_removes_the_helper_pods(installed, tmp_path):
    # given: a run held inside a test (its claim exists), its helper pods running
    kubeconfig, k8s = installed
    with WatchedRun(_existing_run(kubeconfig, tmp_path, str(HELD))) as run:
        selector = names.RUN_LABEL  # any object of a run: the module's runs go one after another
        claim = run.wait_until(
            "the held test's claim", lambda: k8s.list("ResourceClaim", None, label_selector=selector)
        )
        run_id = claim[0].labels[names.RUN_LABEL]
        helpers = run.wait_until(
            "helper pods",
            lambda: [p for p in k8s.list("Pod", None, label_selector=selector) if p.name.startswith("helper-")],
        )
        # when: Ctrl-C
        code, _took = run.ctrl_c(within=120)
    # then: the run is interrupted and nothing of it is left, helper pods included
    assert code == 2 and "VERDICT: INTERRUPTED" in run.output and len(helpers) == 2, run.tail()
    assert sweep.labelled(k8s, run_id) == [], run.tail()
    assert not [p for p in k8s.list("Pod", helpers[0].namespace)], run.tail()


def test_disruptive_profile_is_refused_without_opt_in(installed, tmp_path):
    kubeconfig, k8s = installed
    namespaces = {ns.name for ns in k8s.list("Namespace")}
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference"]
    proc = _cli(*argv, "--driver-deploy", "preinstalled", "--profile", "disruptive", "--report-dir", str(tmp_path))
    assert proc.returncode == 4 and "--allow-disruptive" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert {ns.name for ns in k8s.list("Namespace")} == namespaces


def test_a_run_without_driver_deploy_checks_the_installed_release_and_leaves_it_untouched(installed, tmp_path):
    # given: the cluster with the driver's Helm release, and the release now
    kubeconfig, k8s = installed
    before = _release(k8s)
    # when: a run names no --driver-deploy (the reference profile's own mode would deploy it: bundled)
    argv = [
        "run",
        "--cluster",
        "existing",
        "--kubeconfig",
        kubeconfig,
        "--driver",
        "reference",
        "--profile",
        "standard",
    ]
    argv += [
        "--workers",
        "0",
        "--no-report",
        "--report-dir",
        str(tmp_path),
        "--",
        "-k",
        "test_pod_with_claim_runs_and_sees",
    ]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: it qualified the installed driver (preinstalled), and the release is exactly as it was
    assert proc.returncode == 0 and "VERDICT: PASS" in out and "1 passed" in out, out[-6000:]
    assert f"deploying driver {DRIVER} (preinstalled)" in out, out[-6000:]
    assert _release(k8s) == before


def test_allow_install_refuses_a_release_that_exists_and_changes_nothing(installed, tmp_path):
    # given: the cluster with the driver's Helm release, and the release now
    kubeconfig, k8s = installed
    before = _release(k8s)
    # when: a run asks to install the same release, with the opt-in
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--profile", "core"]
    argv += [
        "--driver-deploy",
        "helm",
        "--allow-install",
        "--workers",
        "0",
        "--no-report",
        "--report-dir",
        str(tmp_path),
    ]
    proc = _cli(*argv)
    out = proc.stdout + proc.stderr
    # then: bad input (exit 4) naming the release and the namespace, nothing installed or uninstalled
    assert proc.returncode == 4 and "VERDICT: ERROR (bad input)" in out, out[-6000:]
    assert f"helm release {RELEASE!r} already exists in namespace {NAMESPACE!r}" in out, out[-6000:]
    assert _release(k8s) == before
    left = [ns.name for ns in k8s.list("Namespace") if names.RUN_LABEL in (ns.get("metadata.labels") or {})]
    assert left == [], left


# issue 22 §2: preflight and cleanup


def _run_namespaces(k8s: K8s, prefix: str) -> list[str]:
    return [n.name for n in k8s.list("Namespace") if n.labels.get(names.RUN_LABEL, "").startswith(prefix)]


def test_preflight_with_the_admin_kubeconfig_is_all_ok_and_leaves_nothing(installed):
    """Every check of `preflight` passes against a cluster from `dra-conformance install` with cluster-admin,
    and the dry run of the helper pods leaves no namespace. Source: issue 22 §2 acceptance."""
    # given: the installed cluster and its admin kubeconfig
    kubeconfig, k8s = installed
    # when: preflight checks it for the reference profile with node access, as text and as JSON
    text = _cli("preflight", "--kubeconfig", kubeconfig, "--node-access", "privileged-pod", timeout=300)
    as_json = _cli("preflight", "--kubeconfig", kubeconfig, "-o", "json", timeout=300)
    # then: exit 0, every line ok (RBAC rows, the driver, images, admission among them), nothing left behind
    lines = text.stdout.splitlines()[:-1]
    assert text.returncode == 0 and lines and all(line.startswith("ok ") for line in lines), text.stdout + text.stderr
    for probe in ("rbac namespaces", "rbac /metrics", f"resourceslices {DRIVER}", "admission privileged helper pods"):
        assert any(probe in line for line in lines), (probe, text.stdout)
    checks = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and checks and {c["status"] for c in checks} == {"ok"}, as_json.stdout
    assert _run_namespaces(k8s, "preflight-") == []


def _service_account_kubeconfig(k8s: K8s, admin: str, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig for ServiceAccount ``namespace/account``: the admin kubeconfig's cluster and a token from
    the TokenRequest API (authentication.k8s.io/v1, via the kubernetes client)."""
    request = kclient.AuthenticationV1TokenRequest(
        spec=kclient.V1TokenRequestSpec(audiences=[], expiration_seconds=900)
    )
    token = kclient.CoreV1Api(k8s.api).create_namespaced_service_account_token(account, namespace, request)
    cluster = yaml.safe_load(Path(admin).read_text())["clusters"][0]
    user, context = (
        {"name": account, "user": {"token": token.status.token}},
        {"cluster": cluster["name"], "user": account},
    )
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [user], "current-context": account}
    path.write_text(yaml.safe_dump({**config, "contexts": [{"name": account, "context": context}]}))
    return path


def test_preflight_names_what_a_namespaced_role_lacks(installed, tmp_path):
    """A user bound to a Role in one namespace cannot run the suite: preflight exits 1 and names the missing
    cluster-wide permissions. Source: issue 22 §2 acceptance; authorization.k8s.io/v1 SelfSubjectAccessReview."""
    # given: a ServiceAccount bound to a Role granting everything, but only in its own namespace
    kubeconfig, k8s = installed
    ns = names.dns_label(f"preflight-rbac-{secrets.token_hex(3)}")
    k8s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        waits.default_service_account(k8s, ns, timeout=60)
        k8s.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": ns}})
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
        rule = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
        k8s.request("POST", f"{rbac}/roles", body={"metadata": {"name": "all"}, "rules": [rule]})
        subject = {"kind": "ServiceAccount", "name": "runner", "namespace": ns}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "all"}
        k8s.request(
            "POST", f"{rbac}/rolebindings", body={"metadata": {"name": "all"}, "roleRef": ref, "subjects": [subject]}
        )
        limited = _service_account_kubeconfig(k8s, kubeconfig, ns, "runner", tmp_path / "limited.kubeconfig")
        # when: preflight runs as that ServiceAccount
        proc = _cli("preflight", "--kubeconfig", str(limited), timeout=300)
    finally:
        k8s.unguarded().delete("Namespace", ns)  # takes the ServiceAccount, Role and RoleBinding with it
    # then: exit 1, naming the specific permissions the run lacks, and its own reads still answered
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for missing in ("create namespaces", "list resourceslices", "get /metrics", "list nodes"):
        assert any(line.startswith("missing") and missing in line for line in out.splitlines()), (missing, out)
    assert "ok      api resource.k8s.io/v1" in out, out
    waits.object_gone(k8s, Obj({"kind": "Namespace", "metadata": {"name": ns}}), timeout=300)


def test_cleanup_removes_only_the_labelled_objects_of_the_run(installed):
    """`cleanup --run-id` removes a killed run's namespace and ResourceClaim (after `--dry-run` listed and kept
    them) and leaves an unlabelled namespace alone. Source: issue 22 §2; design.md §6 (the sweep)."""
    # given: what a killed run leaves (a run-labelled namespace and claim), and a namespace of someone else
    kubeconfig, k8s = installed
    run_id = "r20000101-0000-" + secrets.token_hex(2)
    ns = namespaces.namespace_name(run_id, "killed")
    other = names.dns_label(f"not-ours-{secrets.token_hex(3)}")
    k8s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    labels = names.run_labels(run_id, "killed")
    k8s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
    claim = {"metadata": {"name": "claim", "namespace": ns, "labels": labels}, "apiVersion": "resource.k8s.io/v1"}
    claim.update(
        kind="ResourceClaim", spec={"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRIVER}}]}}
    )
    k8s.create(claim)
    try:
        # when: a dry run, then the cleanup
        dry = _cli("cleanup", "--kubeconfig", kubeconfig, "--run-id", run_id, "--dry-run", timeout=300)
        kept = k8s.exists("Namespace", ns) and k8s.exists("ResourceClaim", "claim", ns)
        proc = _cli("cleanup", "--kubeconfig", kubeconfig, "--run-id", run_id, timeout=600)
        # then: the dry run listed both and kept them; the cleanup removed both; the other namespace stays
        assert dry.returncode == 0 and kept, dry.stdout + dry.stderr
        for ref in (f"Namespace {ns}", f"ResourceClaim {ns}/claim"):
            assert f"would remove {ref} (run {run_id})" in dry.stdout, dry.stdout
            assert f"removed {ref} (run {run_id})" in proc.stdout, proc.stdout + proc.stderr
        assert proc.returncode == 0 and not k8s.exists("Namespace", ns), proc.stdout + proc.stderr
        assert sweep.labelled(k8s, run_id) == [] and k8s.exists("Namespace", other)
    finally:
        k8s.unguarded().delete("Namespace", other)
        if k8s.exists("Namespace", ns):
            k8s.unguarded().delete("Namespace", ns)


NO_PRIVILEGED = "dra-conformance-e2e-no-privileged"  # a ValidatingAdmissionPolicy standing in for a policy engine
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def _deny_privileged_helper_pods(k8s: K8s) -> None:
    """A ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, CEL) and its binding that refuse privileged
    containers in namespaces labelled as a run's helper namespace (``dra-conformance.test/test=node-access``)."""
    privileged = "c, has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged"
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    validation = {"expression": f"!object.spec.containers.exists({privileged})", "message": "e2e: no privileged pods"}
    spec = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [rule]}, "validations": [validation]}
    k8s.request(
        "POST", f"{ADMISSION}/validatingadmissionpolicies", body={"metadata": {"name": NO_PRIVILEGED}, "spec": spec}
    )
    selector = {"matchLabels": {names.TEST_LABEL: "node-access"}}
    binding = {
        "policyName": NO_PRIVILEGED,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": selector},
    }
    k8s.request(
        "POST",
        f"{ADMISSION}/validatingadmissionpolicybindings",
        body={"metadata": {"name": NO_PRIVILEGED}, "spec": binding},
    )


def _refused(k8s: K8s, pod: dict) -> bool:
    try:
        k8s.request(
            "POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", query={"dryRun": "All"}, body=pod
        )
    except errors.ApiError as exc:
        return "e2e: no privileged pods" in str(exc)
    return False


def test_preflight_names_the_admission_that_refuses_the_helper_pods(installed):
    """Where a policy refuses privileged pods, preflight with --node-access privileged-pod exits 1 and names the
    rejection from its server-side dry run (dryRun=All, KEP-576), leaving no namespace. Source: issue 22 §2."""
    # given: a policy refusing privileged pods in helper namespaces, in force (a dry run is refused)
    kubeconfig, k8s = installed
    probe_run = "r20000101-0000-" + secrets.token_hex(2)
    probe = k8s.create(helper_namespace(names.dns_label(f"dra-preflight-e2e-{probe_run}"), probe_run))
    try:
        _deny_privileged_helper_pods(k8s)
        waits.default_service_account(k8s, probe.name, timeout=60)
        pod = helper_pod("helper-0", probe.name, k8s.list("Node")[0].name, "busybox:1.36", probe_run)
        assert waits.poll(lambda: _refused(k8s, pod), timeout=60, interval=1), "the policy never came into force"
        # when: preflight checks the helper pods
        proc = _cli("preflight", "--kubeconfig", kubeconfig, "--node-access", "privileged-pod", timeout=300)
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            with contextlib.suppress(errors.NotFound):
                k8s.request("DELETE", f"{ADMISSION}/{kind}/{NO_PRIVILEGED}")
        k8s.unguarded().delete("Namespace", probe.name)
    # then: exit 1 and the admission line names the refusal; every other line is ok; nothing is left
    out = proc.stdout + proc.stderr
    refused = [line for line in out.splitlines() if line.startswith("missing admission privileged helper pods")]
    assert proc.returncode == 1 and len(refused) == 1 and "e2e: no privileged pods" in refused[0], out
    assert [line for line in out.splitlines()[:-1] if not line.startswith("ok ")] == refused, out
    assert _run_namespaces(k8s, "preflight-") == []
