"""The registry rehearsal (issue 25 §1-§3), as a real team's cluster is: a 1-node local cluster whose containerd
pulls only through the lab's loopback registry (hosts.toml mirrors, nothing imported by the harness: the node's
image store holds none of our images before the driver is installed), the suite's images pushed there with
`dra-conformance images push`, the reference driver installed by the test itself with ``helm install`` from the
OCI chart pushed with ``helm push`` (and the vendor's ``--values`` file), then ``dra-conformance run --cluster
existing --driver-deploy preinstalled --node-access privileged-pod --image-registry ... --profile core`` passes,
the test and helper pods' images came from the registry, and the driver's Helm release is untouched. The
registry, its storage and the cluster are gone afterwards."""

from __future__ import annotations

import subprocess

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.images import images_on, node_targets
from conformance_lab.local.provider import free_slot
from conformance_lab.local.state import SlotTaken
from conformance_lab.registry import server
from conformance_lab.toolchain import cache

from conformance import images as refs
from conformance.drivers.readiness import daemonset_ready
from conformance.k8s import waits
from conformance.k8s.client import K8s
from tests.e2e.existing.common import DRIVER, NAMESPACE, RELEASE, _cli, _release

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # its own cluster (a free slot), beside the others

OURS = ("pause", "busybox", "reference-driver")
CHART = "dra-reference-driver"


def _run(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def _settled(k8s: K8s) -> bool:
    """The driver's DaemonSet ready and available on every node: its controller writes no more status."""
    found = k8s.list("DaemonSet", NAMESPACE)
    return bool(found) and all(
        daemonset_ready(d) and d.get("status.numberAvailable") == d.get("status.desiredNumberScheduled") for d in found
    )


def _published(k8s: K8s) -> bool:
    """The driver published at least one ResourceSlice."""
    return any(s.get("spec.driver") == DRIVER for s in k8s.list("ResourceSlice"))


def _node_images(name: str) -> set[str]:
    _, ctr, nodes = node_targets(name)
    return set().union(*(images_on(ctr, socket) for _, socket in nodes))


def publish(reg: server.Registry, tmp) -> None:
    """Push the suite's images (OURS) with `dra-conformance images push` and the reference chart with `helm push`
    to ``reg`` (``oci://HOST/charts/dra-reference-driver``, version 0.1.0)."""
    helm = str(cache.tool_binary("helm"))
    pushed = _cli("images", "push", *OURS, "--registry", reg.host)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    packaged = _run(helm, "package", str(refs.reference_driver_chart()), "--destination", str(tmp))
    assert packaged.returncode == 0, packaged.stderr
    charted = _run(helm, "push", str(next(tmp.glob("*.tgz"))), f"oci://{reg.host}/charts", "--plain-http")
    assert charted.returncode == 0, charted.stderr


def install_from_oci(reg: server.Registry, kubeconfig: str, tmp) -> K8s:
    """``helm install`` the reference driver from the OCI chart in ``reg`` with a vendor values file, as a cluster
    admin would, and wait until its DaemonSet is settled and its ResourceSlices are published; returns a client."""
    values = tmp / "vendor-values.yaml"
    values.write_text("stateDir: /var/lib/kubelet/dra-reference-driver\n")
    install = _run(str(cache.tool_binary("helm")), "install", RELEASE, f"oci://{reg.host}/charts/{CHART}",
                   "--version", "0.1.0", "--plain-http", "--values", str(values), "--namespace", NAMESPACE,
                   "--create-namespace", "--wait", "--timeout", "240s", "--kubeconfig", kubeconfig)  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    k8s = K8s.from_kubeconfig(kubeconfig)
    assert waits.poll(lambda: _settled(k8s), timeout=120, interval=1.0), k8s.list("DaemonSet", NAMESPACE)
    published = waits.poll(lambda: _published(k8s), timeout=120, interval=1.0)
    assert published, f"no ResourceSlice of {DRIVER} within 120 s of the DaemonSet being ready"
    return k8s


def qualify(reg: server.Registry, kubeconfig: str, report) -> subprocess.CompletedProcess:
    """`run --cluster existing --driver-deploy preinstalled --node-access privileged-pod --image-registry HOST
    --profile core` of the preinstalled reference driver (serial, no Allure report)."""
    argv = ["run", "--cluster", "existing", "--kubeconfig", kubeconfig, "--driver", "reference", "--profile", "core"]
    argv += ["--driver-deploy", "preinstalled", "--node-access", "privileged-pod", "--image-registry", reg.host]
    return _cli(*argv, "--workers", "0", "--no-report", "--report-dir", str(report))


def _mirrored_cluster(registry: str):
    """(name, handle) of a 1-node cluster in a free slot pulling through ``registry``; a slot another cluster
    records first while this one starts (SlotTaken, nothing started yet) makes it try the next free one."""
    for _attempt in range(3):
        slot = free_slot()
        name = f"rehearsal{slot}"
        config = LocalClusterConfig(name=name, nodes=1, slot=slot, registry_mirror=registry, daemonset_paths=True)
        try:
            return name, LocalCluster(config, progress=print).up()
        except SlotTaken as exc:
            print(f"{exc}: choosing another slot")
    raise SlotTaken("every free slot was taken while choosing one")


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory, local_cluster):
    """(registry, cluster name, kubeconfig, images on the node before the driver): a registry with our images and
    the reference chart, and a cluster pulling only from it; all removed after the module. The shared cluster
    (``local_cluster``) starts first: it keeps the host's kube-proxy when this module runs on an xdist worker."""
    with server.running_registry() as reg:
        publish(reg, tmp_path_factory.mktemp("rehearsal"))
        name, handle = _mirrored_cluster(reg.host)
        try:
            yield reg, name, str(handle.kubeconfig), _node_images(name)
        finally:
            LocalCluster.load(name).down()


def test_a_cluster_pulling_from_the_registry_qualifies_the_driver_helm_installed_from_an_oci_chart(rehearsal, tmp_path):
    # given: nothing of ours on the node, then the driver installed by helm from the OCI chart with a values file
    reg, name, kubeconfig, before = rehearsal
    ours = {refs.normalize(r) for r in (refs.OFFLINE["pause"], refs.OFFLINE["busybox"], refs.reference_driver_ref())}
    k8s = install_from_oci(reg, kubeconfig, tmp_path)
    release = _release(k8s)
    # when: the existing-cluster path runs the core profile with every suite image from the registry
    proc = qualify(reg, kubeconfig, tmp_path / "report")
    out = proc.stdout + proc.stderr
    # then: it passes, every image of ours on the node came from a pull, and the release is as installed
    assert not before & ours, f"the harness imported images before the run: {sorted(before & ours)}"
    assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-6000:]
    pulled = _node_images(name)
    assert refs.in_registry(refs.OFFLINE["busybox"], reg.host) in pulled, sorted(pulled)
    assert refs.normalize(refs.reference_driver_ref()) in pulled, sorted(pulled)
    assert _release(k8s) == release
