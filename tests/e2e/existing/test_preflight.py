"""`preflight` and `cleanup` on an existing cluster (issue 22 §2): all ok as cluster admin; a namespaced Role's
missing permissions and an admission policy's refusal of the helper pods named; `cleanup` removes only what a
killed run labelled."""

from __future__ import annotations

import contextlib
import json
import re
import secrets

import pytest

from conformance.core import errors, names
from conformance.core.objects import Obj
from conformance.k8s import namespaces, sweep, waits
from conformance.k8s.client import K8s
from conformance.node.helper_pod import helper_namespace, helper_pod
from tests.e2e.existing.common import (
    DRIVER,
    _cli,
    _service_account_kubeconfig,
    printed_role_kubeconfig,
)

pytestmark = pytest.mark.e2e


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
        # when: preflight runs as that ServiceAccount, and a run is asked for its plan as that ServiceAccount
        proc = _cli("preflight", "--kubeconfig", str(limited), timeout=300)
        planned = _cli("run", "--cluster", "existing", "--kubeconfig", str(limited), "--plan", timeout=300)
    finally:
        k8s.unguarded().delete("Namespace", ns)  # takes the ServiceAccount, Role and RoleBinding with it
    # then: exit 1, naming the specific permissions the run lacks, and its own reads still answered
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for missing in ("create namespaces", "list resourceslices", "get /metrics", "list nodes"):
        assert any(line.startswith("missing") and missing in line for line in out.splitlines()), (missing, out)
    assert "ok      api resource.k8s.io/v1" in out, out
    # and: the plan stops (exit 3) naming the first permission the API server refused, and points to preflight
    said = planned.stdout + planned.stderr
    assert planned.returncode == 3 and "lacks a permission" in said and "preflight" in said, said[-3000:]
    assert re.search(r"cannot (list|get) resource \"(nodes|resourceslices|namespaces)\"", said), said[-3000:]
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


def test_the_printed_role_is_enough_for_preflight_and_a_core_run(installed, tmp_path):
    """A ServiceAccount bound only to the ClusterRole of `preflight --print-role --node-access privileged-pod`
    (no cluster-admin) passes preflight and qualifies the installed driver with the core profile: the role the
    tool prints is the role a customer can grant. Source: issue 22 §2; issue 27 §4 (a minimal ClusterRole)."""
    # given: the printed role bound to a ServiceAccount of a namespace of this test
    kubeconfig, k8s = installed
    with printed_role_kubeconfig(k8s, kubeconfig, tmp_path / "role.kubeconfig") as limited:
        # when: preflight and a core run go as that ServiceAccount
        checked = _cli("preflight", "--kubeconfig", limited, "--node-access", "privileged-pod", timeout=300)
        argv = ["run", "--cluster", "existing", "--kubeconfig", limited, "--node-access", "privileged-pod"]
        ran = _cli(*argv, "--profile", "core", "--no-report", "--report-dir", str(tmp_path / "report"))
    # then: every preflight line ok (none missing, none refused), and the run passes
    lines = checked.stdout.splitlines()[:-1]
    assert checked.returncode == 0 and lines and not [x for x in lines if x.startswith("missing")], checked.stdout
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0 and "VERDICT: PASS" in said, said[-5000:]
