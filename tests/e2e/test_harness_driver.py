"""End-to-end tests of the driver layer and capability discovery on the shared local cluster: the bundled
reference driver deploys in host mode and publishes; a missing DeviceClass and a driver that publishes no
slices each give DriverNotReady naming the driver and what was awaited; discovery yields evidence."""

from __future__ import annotations

import uuid

import pytest

from conformance.core import errors, names
from conformance.core.profile import parse
from conformance.drivers import profiles
from conformance.drivers.host import HostDeployer
from conformance.drivers.preinstalled import PreinstalledDeployer
from conformance.k8s.client import K8s
from conformance.runner import facts
from reference_driver.inventory.simulated import DEFAULT_COUNT

pytestmark = pytest.mark.e2e


def _profile(driver: str, classes: list[str], mode: str = "preinstalled", name: str = "e2e") -> object:
    return parse(
        {
            "name": name,
            "driver": driver,
            "device_classes": classes,
            "devices_per_node": 4,
            "visibility": {"env_regex": "^DRA_GPU_DEVICE_"},
            "capabilities": {"multiple_devices": True},
            "deploy": {"mode": mode},
        },
        source="e2e-profile.yaml",
    )


@pytest.fixture
def k8s(local_cluster):
    return K8s.from_kubeconfig(local_cluster.kubeconfig)


def test_missing_device_class_is_driver_not_ready(k8s):
    prof = _profile("absent.e2e.dra-conformance.test", ["no-such-class-e2e"])
    with pytest.raises(errors.DriverNotReady) as info:
        PreinstalledDeployer(prof, k8s).deploy()
    assert "absent.e2e.dra-conformance.test" in str(info.value) and "DeviceClass 'no-such-class-e2e'" in str(info.value)


def test_driver_publishing_no_slices_is_driver_not_ready(k8s):
    driver = f"silent-{uuid.uuid4().hex[:6]}.e2e.dra-conformance.test"
    k8s.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        }
    )
    try:
        with pytest.raises(errors.DriverNotReady) as info:
            PreinstalledDeployer(_profile(driver, [driver]), k8s, ready_timeout=4).deploy()
        text = str(info.value)
        assert driver in text and "ResourceSlices with at least one device" in text and "no ResourceSlice" in text
    finally:
        k8s.delete("DeviceClass", driver)


def test_bundled_reference_driver_publishes_and_capabilities_have_evidence(k8s, local_cluster, tmp_path):
    """The bundled deployer starts one reference plugin per node (own driver name, so it cannot clash with
    other tests), creates its DeviceClass, waits for slices; teardown removes processes, class and slices."""
    suffix = uuid.uuid4().hex[:6]
    base = profiles.load("reference")
    driver = f"h{suffix}.dra.test"  # unix socket paths must stay short (< 108 bytes)
    prof = parse(
        {
            "name": f"e2eh-{suffix}",
            "driver": driver,
            "device_classes": [driver],
            "devices_per_node": 4,
            "visibility": {"env_regex": base.visibility.env_regex},
            "capabilities": {**base.capabilities, "opaque_config": False},  # no sample: not its subject
            "deploy": {"mode": "bundled"},
        },
        source="e2e",
    )
    run_id = names.new_run_id()
    deployer = HostDeployer(local_cluster, prof, k8s, run_id, state_root=tmp_path)
    try:
        handle = deployer.deploy()
        assert set(handle.processes) == {n.name for n in local_cluster.nodes}
        caps, found = facts.discover(k8s, prof, cluster=local_cluster, driver=handle)
        per_node = {n.name: sum(1 for d in found["devices"] if d["node"] == n.name) for n in local_cluster.nodes}
        assert all(count == DEFAULT_COUNT for count in per_node.values()), per_node
        assert caps.has("multi_node") and caps.has("driver.multiple_devices"), caps.as_dict()
        assert "v1" in found["served_versions"] and caps.has("gate.DRAPrioritizedList")
        assert "kubernetes_feature_enabled" in caps.evidence("gate.DRAPrioritizedList")
        assert any(driver in text or text for text in handle.logs().values())
    finally:
        deployer.teardown()
    assert k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}") == []
    assert not k8s.exists("DeviceClass", driver)
    assert not any(p.is_running() for p in handle.processes.values())
