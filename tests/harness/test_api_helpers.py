"""Unit tests of the helpers suites reach through conformance.api without a cluster: edited copies and patch
bodies, the kind catalog, Builder.pod options, the one poll primitive (``waits.poll`` / ``stays_equal``),
the raw request path of the client (Warning headers) and the API verbs built on it."""

import json
from types import SimpleNamespace

import pytest

from conformance import api
from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.builders.builder import Builder, BuilderContext
from conformance.k8s.client import K8s


def _builder():
    return Builder(
        BuilderContext(
            namespace="ns1", run_id="r1", test_id="test-x-abc123", driver="gpu.example.com", device_class="gpu-class"
        )
    )


def test_with_field_edits_a_copy_at_a_dotted_path():
    claim = _builder().claim()
    edited = api.with_field(claim, "spec.devices.requests.0.exactly.count", 2)
    assert edited.get("spec.devices.requests.0.exactly.count") == 2
    assert claim.get("spec.devices.requests.0.exactly.count") == 1
    assert api.with_label(claim, "k", "v").labels == {**claim.labels, "k": "v"}
    assert api.with_field(claim, "status", api.EMPTY_ALLOCATION).get("status") == {"allocation": {}}


def test_slice_and_class_edits():
    b = _builder()
    assert [d["name"] for d in api.with_added_device(b.resource_slice([], all_nodes=True)).get("spec.devices")] == [
        "dev-0"
    ]
    cls = api.with_selectors(b.device_class(selectors=api.NEVER_MATCHES), "1 == 0")
    assert cls.get("spec.selectors") == [{"cel": {"expression": "1 == 0"}}]


def test_patch_bodies_per_type():
    claim = _builder().claim()
    assert api.label_patch(claim, "json", "a/b~c", "v") == [
        {"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "v"}
    ]
    assert api.label_patch(claim, "merge", "k", "v") == {"metadata": {"labels": {"k": "v"}}}
    applied = api.label_patch(claim, "apply", "k", "v")
    assert (applied.kind, applied.name, applied.namespace, applied.labels["k"]) == (
        "ResourceClaim",
        claim.name,
        "ns1",
        "v",
    )
    assert api.status_patch(claim, "apply", {"x": 1}).get("status") == {"x": 1}
    assert set(api.PATCH_TYPES) == {"json", "merge", "strategic", "apply"}


def test_kind_catalog_builds_each_kind_with_its_resource_facts():
    b = _builder()
    assert [(k.name, k.plural, k.namespaced) for k in api.CORE_KINDS] == [
        ("DeviceClass", "deviceclasses", False),
        ("ResourceClaim", "resourceclaims", True),
        ("ResourceClaimTemplate", "resourceclaimtemplates", True),
        ("ResourceSlice", "resourceslices", False),
    ]
    assert all(k.build(b).kind == k.name for k in api.KINDS)
    assert len(api.reserved_for(3)["reservedFor"]) == 3 and [str(lim) for lim in api.limits.LIMITS]


def test_pod_options_bypass_scheduler_unreferenced_claims_and_restart_policy():
    b = _builder()
    claim, template = b.claim(), b.claim_template()
    pod = b.pod(uses=claim, unreferenced=[template], node_name="n1", bypass_scheduler=True, restart_policy="Always")
    assert pod.get("spec.nodeName") == "n1" and "nodeSelector" not in pod.get("spec")
    assert pod.get("spec.restartPolicy") == "Always"
    assert pod.get("spec.resourceClaims") == [
        {"name": "c0", "resourceClaimName": claim.name},
        {"name": "c1", "resourceClaimTemplateName": template.name},
    ]
    assert pod.get("spec.containers.0.resources.claims") == [{"name": "c0"}]
    assert b.pod(node_name="n1").get("spec.nodeSelector") == {"kubernetes.io/hostname": "n1"}


def test_poll_returns_true_when_the_check_passes_and_false_at_the_deadline():
    calls = []
    assert api.waits.poll(lambda: calls.append(1) or len(calls) == 3, timeout=5, interval=0.01)
    assert len(calls) == 3
    assert api.waits.poll(lambda: False, timeout=0.05, interval=0.01) is False
    with pytest.raises(ValueError):
        api.waits.poll(lambda: True, timeout=0, interval=1)


def test_stays_equal_returns_the_answer_or_shows_the_change():
    assert api.waits.stays_equal(lambda: "Pending", duration=0.05, interval=0.01) == "Pending"
    answers = iter(["Pending", "Pending", "Running"])
    with pytest.raises(AssertionError, match="Running"):
        api.waits.stays_equal(lambda: next(answers), duration=5, interval=0.01)


class _Api:
    """An ApiClient stand-in: records requests, answers ``status``/``body``/``warnings``."""

    def __init__(self, status=200, body=b"{}", warnings=()):
        self.status, self.body, self.warnings, self.sent = status, body, list(warnings), []
        self.rest_client = self

    def param_serialize(self, method, path, query_params, header_params, body, auth_settings):
        return method, "https://api" + path, header_params, body, None

    def request(self, method, url, headers, body, _request_timeout):
        self.sent.append((method, url, headers, body))
        raw = SimpleNamespace(
            data=self.body, headers=SimpleNamespace(getlist=lambda _name: self.warnings), release_conn=lambda: None
        )
        return SimpleNamespace(status=self.status, reason="R", response=raw, read=lambda: self.body)


def test_request_returns_body_and_warning_texts():
    fake = _Api(body=b'{"items": []}', warnings=['299 - "resource.k8s.io/v1beta1 is deprecated", 299 - "x"'])
    body, warnings = api.api_verbs.get_with_warnings(K8s(fake), "ResourceClaim", None, "ns", "v1beta1")
    assert body == {"items": []} and warnings == ["resource.k8s.io/v1beta1 is deprecated", "x"]
    assert fake.sent[0][1] == "https://api/apis/resource.k8s.io/v1beta1/namespaces/ns/resourceclaims"


def test_apply_and_delete_collection_use_their_verbs():
    fake = _Api(body=json.dumps({"kind": "DeviceClass", "metadata": {"name": "c"}}).encode())
    k8s = K8s(fake)
    assert api.api_verbs.apply(k8s, _builder().device_class(name="c")).name == "c"
    method, url, headers, _ = fake.sent[0]
    assert (method, headers["Content-Type"]) == ("PATCH", "application/apply-patch+yaml")
    api.api_verbs.delete_collection(k8s, "ResourceClaim", "ns", "a=b")
    assert fake.sent[1][:2] == ("DELETE", "https://api/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims")


def test_request_raises_the_status_error():
    fake = _Api(
        status=422,
        body=json.dumps(
            {
                "reason": "Invalid",
                "message": "bad",
                "details": {"causes": [{"field": "spec", "reason": "FieldValueTooMany"}]},
            }
        ).encode(),
    )
    error = api.api_verbs.refused(lambda: api.api_verbs.apply(K8s(fake), _builder().claim()))
    assert isinstance(error, errors.Invalid) and api.api_verbs.causes(error) == [("spec", "FieldValueTooMany")]
    with pytest.raises(AssertionError, match="accepted"):
        api.api_verbs.refused(lambda: Obj({"kind": "Pod", "metadata": {"name": "p"}}))
