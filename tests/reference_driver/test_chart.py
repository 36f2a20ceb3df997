"""The Helm chart lints and renders to least-privilege, node-scoped manifests; the DeviceClass YAML
selects this driver. Needs the cached helm binary (`make setup`); the e2e module applies the rendered
manifests with a server-side dry-run. Source: feature-catalog.md PERM-01/PERM-02."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from reference_driver import DRIVER_NAME

CHART = Path(__file__).resolve().parents[2] / "reference_driver" / "deploy" / "chart"
DEPLOY = CHART.parent


def helm() -> Path:
    from conformance_lab.toolchain import cache  # test-side only: the driver never imports conformance

    try:
        return cache.tool_binary("helm")
    except cache.CacheMiss as err:
        pytest.skip(f"helm binary not built yet: {err}")


def render(*extra: str) -> list[dict]:
    """`helm template` output as a list of objects."""
    out = subprocess.run(
        [str(helm()), "template", "refdrv", str(CHART), "--namespace", "dra-ref", "--kube-version", "1.34.0", *extra],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_helm_lint_passes():
    proc = subprocess.run([str(helm()), "lint", str(CHART)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rendered_rbac_is_least_privilege_and_policy_is_node_scoped():
    objs = {(o["kind"], o["metadata"]["name"]): o for o in render()}
    role = next(o for (k, _), o in objs.items() if k == "ClusterRole")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        (("resource.k8s.io",), ("resourceclaims",)): {"get"},
        (("",), ("nodes",)): {"get"},
        (("resource.k8s.io",), ("resourceslices",)): {"get", "list", "watch", "create", "update", "patch", "delete"},
    }
    vap = next(o for (k, _), o in objs.items() if k == "ValidatingAdmissionPolicy")
    assert "authentication.kubernetes.io/node-name" in yaml.safe_dump(vap)
    assert any(k == "ValidatingAdmissionPolicyBinding" for k, _ in objs)
    assert (
        objs[("DeviceClass", DRIVER_NAME)]["spec"]["selectors"][0]["cel"]["expression"]
        == f'device.driver == "{DRIVER_NAME}"'
    )


def test_daemonset_mounts_kubelet_and_cdi_paths_and_passes_faults():
    ds = next(o for o in render("--set", "faults=prepare-error") if o["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert {"/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/run/cdi"} <= host_paths
    container = pod["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["DRA_REFERENCE_FAULTS"]["value"] == "prepare-error"
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert container["securityContext"]["privileged"] is False


def test_deviceclass_yaml_selects_the_driver():
    obj = yaml.safe_load((DEPLOY / "deviceclass.yaml").read_text())
    assert obj["metadata"]["name"] == DRIVER_NAME
    assert DRIVER_NAME in obj["spec"]["selectors"][0]["cel"]["expression"]
