"""The registry rehearsal on kind (issue 25 §1, §3): a kind cluster (1 control plane + 1 worker; nerdctl over our
containerd and the offline node image where Docker cannot run privileged containers) whose nodes pull only through
the lab's loopback registry (conformance_lab.kind.mirror: hosts.toml mirrors mounted into each node, a forwarder
from each node's loopback to the registry, nothing loaded with ``kind load``). The suite's images are pushed with
`dra-conformance images push`, the reference driver is installed by the test with ``helm install`` from the OCI
chart (with a vendor values file), then ``dra-conformance run --cluster existing --driver-deploy preinstalled
--node-access privileged-pod --image-registry ... --profile core`` passes; no image of ours was on a node before
(nothing imported by the harness), the driver's and the probe's images were pulled, the driver is untouched (its
release Secrets; uid, generation, labels of its DaemonSet; its slices and DeviceClass),
and after the cluster is deleted the forwarder, the mirror tree, the registry and its storage are gone.

Not in ``make test`` (kind create + delete alone take 3-6 min here): ``make kind-rehearsal`` sets
DRA_E2E_KIND_REHEARSAL=1 and runs it (figures in README.md)."""

from __future__ import annotations

import os

import pytest
from conformance_lab.kind import mirror
from conformance_lab.kind.provider import KindProvider
from conformance_lab.registry import server

from conformance import images as refs
from conformance.core.config import RunConfig
from conformance.core.handles import ProviderContext
from tests.e2e.existing.common import NAMESPACE, _driver_objects, _release
from tests.e2e.test_registry_rehearsal import install_from_oci, publish, qualify

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.cluster_lifecycle,  # its own kind cluster: never beside test_kind_cluster's host comparison
    pytest.mark.skipif(
        not os.environ.get("DRA_E2E_KIND_REHEARSAL"), reason="about 6-8 min: `make kind-rehearsal` runs it"
    ),
]


def _untouched(k8s) -> dict:
    """What the run must leave as installed: the Helm release (``_release``: its Secrets, the DaemonSets' uid,
    generation, labels and annotations) and the uid and generation of the driver's DaemonSet, slices and
    DeviceClass (``_driver_objects``). The DaemonSets' resourceVersion and status are printed for the record."""
    for ds in k8s.list("DaemonSet", NAMESPACE):
        print(f"DaemonSet {ds.name} resourceVersion {ds.get('metadata.resourceVersion')} status {ds.get('status')}")
    return {"release": _release(k8s), "objects": _driver_objects(k8s)}


def _images(provider: KindProvider) -> set[str]:
    handle = provider.handle
    env = None if os.path.basename(handle.cli) == "docker" else provider.runtime.env()
    return set().union(*(mirror.node_images(handle.cli, env, n.name) for n in handle.nodes))


@pytest.fixture
def kind_rehearsal(tmp_path):
    """(registry, provider, images on the worker before the driver): our images and the reference chart in a
    fresh registry, a kind cluster pulling only from it; after the test the cluster is deleted, then the
    forwarder must be gone and the mirror tree removed, then the registry stops."""
    with server.running_registry() as reg:
        (tmp_path / "chart").mkdir()
        publish(reg, tmp_path / "chart")
        cfg = RunConfig(cluster="kind", nodes=1, kind_name=f"rehearsal-{os.getpid()}", run_id="r-kind-rehearsal")
        provider = KindProvider(ProviderContext(cfg, tmp_path / "kind", progress=print), mirror=reg.host)
        try:
            provider.up()
            forwarder = mirror.forwarder(cfg.kind_name)
            yield reg, provider, _images(provider)
        finally:
            provider.down()
        assert forwarder is not None and not forwarder.is_running(), forwarder
        assert not mirror.mirror_dir(cfg.kind_name).exists()


def test_a_kind_cluster_pulling_from_the_registry_qualifies_the_driver_helm_installed_from_an_oci_chart(
    kind_rehearsal, tmp_path
):
    # given: nothing of ours on the kind worker, then the driver installed by helm from the OCI chart
    reg, provider, before = kind_rehearsal
    ours = {refs.normalize(r) for r in (refs.OFFLINE["pause"], refs.OFFLINE["busybox"], refs.reference_driver_ref())}
    kubeconfig = str(provider.handle.kubeconfig)
    k8s = install_from_oci(reg, kubeconfig, tmp_path)
    installed = _untouched(k8s)
    # when: the existing-cluster path runs the core profile with every suite image from the registry
    proc = qualify(reg, kubeconfig, tmp_path / "report")
    out = proc.stdout + proc.stderr
    # then: it passes, the images of ours on the worker came from pulls, and the release is as installed
    assert before and not before & ours, f"imported before the run: {sorted(before & ours)} (all: {sorted(before)})"
    assert proc.returncode == 0 and "VERDICT: PASS" in out, out[-6000:]
    pulled = _images(provider)
    assert refs.in_registry(refs.OFFLINE["busybox"], reg.host) in pulled, sorted(pulled)
    assert refs.normalize(refs.reference_driver_ref()) in pulled, sorted(pulled)
    assert _untouched(k8s) == installed
