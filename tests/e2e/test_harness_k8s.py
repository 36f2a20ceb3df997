"""End-to-end tests of conformance.k8s against the shared real local cluster: typed API errors, builders
accepted by a real API server in v1 and v1beta1, waits (timeout with last state; early failure on
FailedPrepareDynamicResources; unschedulable), tracker teardown in DRA order, write guard and run sweep."""

from __future__ import annotations

import pytest

from conformance.core import errors, names
from conformance.k8s import sweep, waits
from conformance.k8s.builders import Builder, device, request
from conformance.k8s.builders.builder import BuilderContext
from conformance.k8s.client import K8s
from conformance.k8s.namespaces import make_namespace
from conformance.k8s.tracker import Tracker

pytestmark = pytest.mark.e2e


@pytest.fixture
def run_id():
    return names.new_run_id()


@pytest.fixture
def k8s(local_cluster, run_id):
    return K8s.from_kubeconfig(local_cluster.kubeconfig, guard_run_id=run_id)


@pytest.fixture
def world(request, local_cluster, k8s, run_id):
    """(tracker, builder) for a fake driver whose DeviceClass and per-node slices the test made."""
    tracker = Tracker(k8s)
    test = names.test_id(request.node.nodeid)
    ns = make_namespace(tracker, run_id, test)
    ctx = BuilderContext(
        namespace=ns.name,
        run_id=run_id,
        test_id=test,
        driver=f"{names.dns_label(test, 20)}.e2e.dra-conformance.test",
        device_class="",
        image=local_cluster.images["busybox"],
    )
    b = Builder(ctx)
    ctx.device_class = tracker.create(b.device_class()).name
    yield tracker, b
    tracker.cleanup()
    assert (
        sweep.labelled(
            k8s, run_id, kinds=("Pod", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice")
        )
        == []
    )


def test_api_errors_are_typed_and_carry_the_status(k8s, world):
    tracker, b = world
    with pytest.raises(errors.NotFound):
        k8s.get("ResourceClaim", "does-not-exist", b.ctx.namespace)
    with pytest.raises(errors.Invalid) as info:
        tracker.create(b.claim(requests=[request("Not_A_DNS_Label")]))
    assert info.value.status == 422 and any("name" in c.get("field", "") for c in info.value.causes), info.value.body


def test_v1beta1_rendering_is_accepted_and_reads_back_as_v1(k8s, world):
    tracker, b = world
    created = tracker.create(b.claim(count=2, version="v1beta1"))
    assert created.api_version == "resource.k8s.io/v1beta1"
    as_v1 = k8s.get("ResourceClaim", created.name, created.namespace)
    assert as_v1.get("spec.devices.requests.0.exactly.count") == 2, as_v1.describe()


def test_wait_timeout_names_state_and_last_observation(k8s, world):
    tracker, b = world
    claim = tracker.create(b.claim())
    with pytest.raises(errors.WaitTimeout) as info:
        waits.claim_allocated(k8s, claim, timeout=3)
    text = str(info.value)
    assert f"claim {claim.namespace}/{claim.name} allocated" in text and "timed out after 3s" in text
    assert claim.name in text  # the last observed state is shown


def test_claim_nothing_matches_leaves_pod_unschedulable(k8s, world):
    tracker, b = world
    claim = tracker.create(b.claim(selectors='device.attributes["x.example.com"].model == "none"'))
    pod = tracker.create(b.pod(uses=claim))
    unschedulable = waits.pod_unschedulable_with(k8s, pod, "cannot allocate all claims", timeout=90)
    assert not unschedulable.get("spec.nodeName"), unschedulable.describe()


def test_pod_wait_fails_early_when_the_driver_cannot_prepare(k8s, world, local_cluster):
    """A test-made slice lets the scheduler allocate, but no kubelet plugin serves the driver: the kubelet
    emits FailedPrepareDynamicResources and pod_running ends early with it (not after its timeout)."""
    tracker, b = world
    node = local_cluster.nodes[0].name
    tracker.create(b.resource_slice([device("dev-0", attributes={"model": "fake"})], node=node, driver=b.ctx.driver))
    claim = tracker.create(b.claim())
    pod = tracker.create(b.pod(uses=claim))
    with pytest.raises(errors.WaitFailed) as info:
        waits.pod_running(k8s, pod, timeout=240)
    assert "FailedPrepareDynamicResources" in str(info.value)
    allocated = waits.claim_allocated(k8s, claim, timeout=30)
    assert allocated.results[0].device == "dev-0", allocated.describe()


def test_write_guard_refuses_objects_of_others_and_sweep_removes_the_run(k8s, run_id, local_cluster):
    foreign = k8s.unguarded().create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"foreign-{run_id}"},
            "spec": {},
        }
    )
    try:
        with pytest.raises(errors.ConfigError):
            k8s.delete("DeviceClass", foreign.name)
    finally:
        k8s.unguarded().delete("DeviceClass", foreign.name)
    # objects created outside any tracker (as after a crash) are found and removed by the run label
    b = Builder(
        BuilderContext(
            namespace=f"sweep-{run_id}", run_id=run_id, test_id="sweep", driver="s.e2e.test", device_class="x"
        )
    )
    k8s.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": f"sweep-{run_id}", "labels": names.run_labels(run_id)},
        }
    )
    waits.until(
        k8s,
        "ServiceAccount",
        "default",
        f"sweep-{run_id}",
        done=lambda o: o is not None,
        timeout=30,
        awaited="default service account",
    )
    k8s.create(b.claim())
    k8s.create(b.device_class())
    k8s.create(b.resource_slice([device("d0")], node=local_cluster.nodes[0].name))
    removed = sweep.sweep_run(k8s, run_id)
    assert {r.split(" ")[0] for r in removed} == {"Namespace", "ResourceClaim", "DeviceClass", "ResourceSlice"}
    assert sweep.labelled(k8s, run_id) == []
