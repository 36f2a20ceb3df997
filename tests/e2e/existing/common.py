"""What the existing-cluster e2e tests share: the reference driver's names, the CLI run as a subprocess, the
driver's objects by identity (the package fixture ``installed`` is in conftest.py)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import yaml
from kubernetes import client as kclient

from conformance.core import errors, names
from conformance.core.objects import Obj
from conformance.k8s import waits
from conformance.k8s.client import K8s

REPO = Path(__file__).resolve().parents[3]
HELD = Path(__file__).parents[1] / "interrupt_suite" / "held.py"  # its test waits until released
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


@contextlib.contextmanager
def installed_reference(timeout: float = 600) -> Iterator[tuple[str, K8s]]:
    """``(kubeconfig, k8s)`` of a 2-node local cluster with the reference chart installed by `dra-conformance
    install` (cluster-admin, as the cluster's admin would), torn down when the block ends."""
    proc = _cli("install", "--driver", "reference", "--driver-deploy", "helm", "--nodes", "2", timeout=timeout)
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
    """The driver's Helm release as it stands: its release Secrets (``owner=helm,name=<release>``) by uid and
    resourceVersion (any write moves it), and the DaemonSets of its namespace by uid, generation (any spec write
    moves it), labels and annotations. Not a DaemonSet's resourceVersion: its controller's status writes move it
    without anyone touching the driver (seen on kind at load 55: 712 -> 1330, same uid and generation). An empty
    probe is an error, never an equal "before" and "after"."""
    query = {"labelSelector": f"owner=helm,name={RELEASE}"}
    secrets = k8s.get_json(f"/api/v1/namespaces/{NAMESPACE}/secrets", query)["items"]
    found = {("Secret", s["metadata"]["name"]): _identity(s["metadata"]) for s in secrets}
    found |= {("DaemonSet", d.name): _spec_identity(d.get("metadata")) for d in k8s.list("DaemonSet", NAMESPACE)}
    kinds = sorted({kind for kind, _ in found})
    assert kinds == ["DaemonSet", "Secret"], f"the probe did not find release {RELEASE} in {NAMESPACE}: {found}"
    return found


def _identity(meta: dict) -> tuple:
    return meta["uid"], meta["resourceVersion"], meta.get("generation")


def _spec_identity(meta: dict) -> tuple:
    return meta["uid"], meta.get("generation"), meta.get("labels"), meta.get("annotations")


def _outcomes(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        kids = {c.tag for c in case}
        out[case.get("name")] = (
            "failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed"
        )
    return out


def _service_account_kubeconfig(
    k8s: K8s, admin: str, namespace: str, account: str, path: Path, expires: int = 900
) -> Path:
    """A kubeconfig for ServiceAccount ``namespace/account``: the admin kubeconfig's cluster and a token from
    the TokenRequest API (authentication.k8s.io/v1, via the kubernetes client) valid ``expires`` seconds."""
    request = kclient.AuthenticationV1TokenRequest(
        spec=kclient.V1TokenRequestSpec(audiences=[], expiration_seconds=expires)
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


@contextlib.contextmanager
def printed_role_kubeconfig(k8s: K8s, admin: str, path: Path, expires: int = 900) -> Iterator[str]:
    """Yields the path of a kubeconfig (written to ``path``) for a ServiceAccount bound ONLY to the ClusterRole
    `preflight --print-role --node-access privileged-pod` prints (no cluster-admin; issue 22 §2, issue 27 §4),
    its token valid ``expires`` seconds. The namespace, account, ClusterRole and binding (all named
    ``dra-conformance-e2e-<hex>``) are removed on exit; the namespace is waited for (bounded, 300 s)."""
    suffix = secrets.token_hex(3)
    ns, name = names.dns_label(f"preflight-role-{suffix}"), f"dra-conformance-e2e-{suffix}"
    printed = _cli("preflight", "--print-role", "--node-access", "privileged-pod")
    assert printed.returncode == 0, printed.stderr
    role = {**yaml.safe_load(printed.stdout), "metadata": {"name": name}}
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    k8s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        waits.default_service_account(k8s, ns, timeout=60)
        k8s.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": ns}})
        k8s.request("POST", f"{rbac}/clusterroles", body=role)
        subject = {"kind": "ServiceAccount", "name": "runner", "namespace": ns}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
        binding = {"metadata": {"name": name}, "roleRef": ref, "subjects": [subject]}
        k8s.request("POST", f"{rbac}/clusterrolebindings", body=binding)
        yield str(_service_account_kubeconfig(k8s, admin, ns, "runner", path, expires))
    finally:
        for kind in ("clusterrolebindings", "clusterroles"):
            with contextlib.suppress(errors.NotFound):
                k8s.request("DELETE", f"{rbac}/{kind}/{name}")
        k8s.unguarded().delete("Namespace", ns)
    waits.object_gone(k8s, Obj({"kind": "Namespace", "metadata": {"name": ns}}), timeout=300)
