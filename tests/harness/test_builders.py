"""Unit tests: builders render complete resource.k8s.io objects with labels, derived names and versions."""

from conformance.core import names, probe_marker
from conformance.k8s.builders import (
    Builder,
    Version,
    container,
    device,
    first_available,
    match_attribute,
    opaque_config,
    request,
    subrequest,
)
from conformance.k8s.builders.builder import BuilderContext


def _builder(**kw):
    return Builder(
        BuilderContext(
            namespace="ns1",
            run_id="r1",
            test_id="test-x-abc123",
            driver="gpu.example.com",
            device_class="gpu.example.com",
            **kw,
        )
    )


def test_claim_defaults_to_one_device_of_the_driver_class_with_labels():
    claim = _builder().claim()
    req = claim.get("spec.devices.requests")[0]
    assert req == {
        "name": "device",
        "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
    }
    assert claim.labels[names.RUN_LABEL] == "r1" and claim.labels[names.TEST_LABEL] == "test-x-abc123"
    assert claim.namespace == "ns1" and names.is_dns_label(claim.name)


def test_names_are_derived_and_unique():
    b = _builder()
    assert len({b.claim().name, b.claim().name, b.claim_template().name}) == 3


def test_all_mode_has_no_count_and_admin_access_is_kept():
    exact = _builder().claim(allocation_mode="All", admin_access=True).get("spec.devices.requests.0.exactly")
    assert exact["allocationMode"] == "All" and "count" not in exact and exact["adminAccess"] is True


def test_constraints_and_config_get_driver_filled():
    claim = _builder().claim(
        requests=[request("a"), request("b", count=2)],
        constraints=[match_attribute("gpu.example.com/model", ["a", "b"])],
        config=[opaque_config({"k": "v"}, requests=["a"])],
    )
    devices = claim.get("spec.devices")
    assert devices["constraints"] == [{"matchAttribute": "gpu.example.com/model", "requests": ["a", "b"]}]
    assert devices["config"] == [{"opaque": {"driver": "gpu.example.com", "parameters": {"k": "v"}}, "requests": ["a"]}]
    assert all(r["exactly"]["deviceClassName"] == "gpu.example.com" for r in devices["requests"])


def test_first_available_renders_v1_and_v1beta1():
    b = _builder()
    spec = [first_available("gpu", subrequest("big", count=2), subrequest("small"))]
    v1 = b.claim(requests=spec)
    assert v1.get("spec.devices.requests.0.firstAvailable.1.deviceClassName") == "gpu.example.com"
    beta = b.claim(requests=[request("x", count=3)], version="v1beta1")
    assert beta.api_version == "resource.k8s.io/v1beta1"
    assert beta.get("spec.devices.requests.0") == {
        "name": "x",
        "deviceClassName": "gpu.example.com",
        "allocationMode": "ExactCount",
        "count": 3,
    }


def test_slice_devices_wrap_basic_for_v1beta1_and_attribute_types():
    b = _builder()
    dev = device(
        "d0", attributes={"model": "m", "index": 1, "ok": True, "v": Version("1.2.3")}, capacity={"memory": "8Gi"}
    )
    s1 = b.resource_slice([dev], node="n1")
    assert s1.get("spec.devices.0.attributes") == {
        "model": {"string": "m"},
        "index": {"int": 1},
        "ok": {"bool": True},
        "v": {"version": "1.2.3"},
    }
    assert s1.get("spec.driver") != "gpu.example.com" and s1.get("spec.nodeName") == "n1"
    s2 = b.resource_slice([dev], all_nodes=True, version="v1beta1")
    assert s2.get("spec.devices.0.basic.capacity.memory.value") == "8Gi" and s2.get("spec.allNodes") is True


def test_pod_references_claims_and_templates_per_container():
    b = _builder(probe_command="env")
    claim, tmpl = b.claim(), b.claim_template()
    pod = b.pod(containers=[container("a", uses=[claim, (tmpl, "device")]), container("b", uses=[claim])])
    assert pod.get("spec.resourceClaims") == [
        {"name": "c0", "resourceClaimName": claim.name},
        {"name": "c1", "resourceClaimTemplateName": tmpl.name},
    ]
    assert pod.get("spec.containers.0.resources.claims") == [{"name": "c0"}, {"name": "c1", "request": "device"}]
    assert pod.get("spec.containers.1.resources.claims") == [{"name": "c0"}]
    assert pod.get("spec.containers.0.command")[:2] == ["sh", "-c"]
    assert pod.get("spec.containers.0.command")[-1] == probe_marker.script("env")


def test_device_class_selects_driver_and_taint_rule_uses_served_version():
    b = _builder(taint_rule_version="v1beta2")
    cls = b.device_class(selectors='device.attributes["gpu.example.com"].index == 0')
    assert cls.get("spec.selectors.0.cel.expression") == 'device.driver == "gpu.example.com"'
    assert len(cls.get("spec.selectors")) == 2 and cls.name.startswith("r1-")
    rule = b.device_taint_rule(key="k", device="gpu-0")
    assert rule.api_version == "resource.k8s.io/v1beta2"
    assert rule.get("spec.deviceSelector") == {"driver": "gpu.example.com", "device": "gpu-0"}


def test_in_namespace_keeps_labels_and_unique_names():
    b = _builder()
    other = b.in_namespace("admin-ns")
    first, second = b.claim(), other.claim()
    assert second.namespace == "admin-ns" and first.name != second.name
    assert second.labels == first.labels


def test_pod_claim_entries_can_be_named_after_their_objects():
    """claim_entries_named_as_objects names each spec.resourceClaims entry like its claim/template (what
    kubelets before 1.35 need to report device health), and containers reference those names."""
    b = _builder()
    claim, tmpl = b.claim(), b.claim_template()
    pod = b.pod(containers=[container("a", uses=[claim, (tmpl, "device")])], claim_entries_named_as_objects=True)
    assert pod.get("spec.resourceClaims") == [
        {"name": claim.name, "resourceClaimName": claim.name},
        {"name": tmpl.name, "resourceClaimTemplateName": tmpl.name},
    ]
    assert pod.get("spec.containers.0.resources.claims") == [
        {"name": claim.name},
        {"name": tmpl.name, "request": "device"},
    ]
