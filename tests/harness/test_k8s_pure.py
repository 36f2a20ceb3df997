"""Unit tests of the pure parts of conformance.k8s and conformance.core: errors, objects, discovery parsing,
pool completeness, names, timeouts."""

import pytest

from conformance.core import errors, names, timeouts
from conformance.core.objects import Obj
from conformance.k8s import discovery
from conformance.k8s.waits.slices import complete_pools


def test_api_error_classes_by_status():
    assert isinstance(errors.api_error_for(404, "NotFound", "x"), errors.NotFound)
    assert isinstance(errors.api_error_for(409, "AlreadyExists", "x"), errors.AlreadyExists)
    assert isinstance(errors.api_error_for(409, "Conflict", "x"), errors.Conflict)
    assert isinstance(errors.api_error_for(503, "ServiceUnavailable", "x"), errors.TransientApiError)
    inv = errors.api_error_for(422, "Invalid", "bad", {"details": {"causes": [{"field": "spec"}]}}, "POST /x")
    assert isinstance(inv, errors.Invalid) and inv.causes == [{"field": "spec"}] and "POST /x" in str(inv)


def test_wait_timeout_message_has_awaited_state_and_events():
    err = errors.WaitTimeout("claim a/b allocated", 12, "status: {}", ["Warning X pod/p: boom"])
    text = str(err)
    assert "claim a/b allocated" in text and "status: {}" in text and "boom" in text and "12s" in text


def test_config_error_names_source_field_and_fix():
    err = errors.ConfigError("must be a list", source="x.yaml", field="device_classes", fix="write [a]")
    assert str(err) == "x.yaml: device_classes: must be a list (fix: write [a])"


def test_obj_snake_case_access_and_describe():
    obj = Obj(
        {
            "kind": "ResourceClaim",
            "apiVersion": "resource.k8s.io/v1",
            "metadata": {"name": "c", "namespace": "n", "managedFields": [1]},
            "status": {
                "reservedFor": [{"name": "p", "uid": "u"}],
                "allocation": {"devices": {"results": [{"device": "gpu-0"}]}},
            },
        }
    )
    assert obj.status.reserved_for[0].name == "p" and obj.results[0].device == "gpu-0"
    assert obj.get("status.allocation.devices.results.0.device") == "gpu-0"
    assert obj.ref == "ResourceClaim n/c" and "managedFields" not in obj.describe()


def test_feature_gate_metrics_parse():
    text = (
        '# HELP x\nkubernetes_feature_enabled{name="DRAAdminAccess",stage="BETA"} 1\n'
        'kubernetes_feature_enabled{name="DRADeviceTaints",stage="ALPHA"} 0\n'
    )
    assert discovery.parse_feature_metrics(text) == {"DRAAdminAccess": True, "DRADeviceTaints": False}
    assert discovery.parse_feature_stages(
        text + 'kubernetes_feature_enabled{name="DRAPrioritizedList",stage=""} 1\n'
    ) == {
        "DRAAdminAccess": "BETA",
        "DRADeviceTaints": "ALPHA",
        "DRAPrioritizedList": "GA",
    }


def test_gate_stages_take_beta_defaults_from_the_release_help():
    from conformance.runner.facts import gate_stages  # noqa: PLC0415

    facts = {
        "feature_gates": {"A": True, "B": True, "G": True},
        "feature_gate_stages": {"A": "BETA", "B": "BETA", "G": "GA"},
        "gate_defaults": {"A": ("BETA", False)},
    }
    assert gate_stages(facts) == {
        "A": {"stage": "BETA", "default": False, "enabled": True},
        "B": {"stage": "BETA", "default": None, "enabled": True},
        "G": {"stage": "GA", "default": True, "enabled": True},
    }


def _slice(pool, gen, count, ndev, node="n1"):
    return Obj(
        {
            "kind": "ResourceSlice",
            "metadata": {"name": f"{pool}-{gen}-{ndev}"},
            "spec": {
                "nodeName": node,
                "pool": {"name": pool, "generation": gen, "resourceSliceCount": count},
                "devices": [{"name": f"d{i}"} for i in range(ndev)],
            },
        }
    )


def test_complete_pools_use_highest_generation_and_count():
    pools = complete_pools([_slice("a", 1, 1, 2), _slice("a", 2, 2, 1), _slice("b", 1, 1, 1)])
    assert set(pools) == {"b"}  # pool a generation 2 has 1 of 2 slices
    pools = complete_pools([_slice("a", 2, 2, 1), _slice("a", 2, 2, 3)])
    assert sum(len(s.get("spec.devices")) for s in pools["a"]) == 4


def test_devices_of_unwraps_v1beta1_basic():
    s = Obj(
        {
            "spec": {
                "nodeName": "n",
                "pool": {"name": "p"},
                "devices": [{"name": "d", "basic": {"attributes": {"model": {"string": "m"}}}}],
            }
        }
    )
    assert discovery.devices_of([s])[0]["attributes"] == {"model": "m"}


def test_names_are_dns_labels_and_run_ids_unique():
    long = "test_" + "x" * 100
    assert names.is_dns_label(names.dns_label(long)) and len(names.dns_label(long)) == 63
    # 4 random hex digits per minute: two IDs collide once in 65,536 pairs, so check that they vary, not a pair
    assert len({names.new_run_id() for _ in range(64)}) > 1
    assert names.is_dns_label(names.test_id("suites/test_a.py::test_B[param-1]"))


def test_timeout_scale():
    timeouts.set_scale(2)
    try:
        assert timeouts.scaled(10) == 20
        with pytest.raises(ValueError):
            timeouts.set_scale(0)
    finally:
        timeouts.set_scale(1)


def test_client_prefers_newest_served_version_for_kinds_missing_in_v1():
    from conformance.k8s.client import K8s

    k8s = K8s(api=None)
    k8s.prefer_versions(
        {
            "v1": ["deviceclasses", "resourceclaims"],
            "v1alpha3": ["devicetaintrules"],
            "v1beta2": ["devicetaintrules", "deviceclasses"],
        }
    )
    assert k8s.versions == {"DeviceTaintRule": "v1beta2"}
    assert k8s._res("DeviceTaintRule", None).version == "v1beta2"
    assert k8s._res("DeviceTaintRule", "v1").version == "v1" and k8s._res("DeviceClass", None).version == "v1"


def test_pod_unschedulable_with_needs_the_dra_reason_text():
    from conformance.k8s import waits  # noqa: PLC0415

    with pytest.raises(ValueError, match="DRA reason"):
        waits.pod_unschedulable_with(None, Obj({}), timeout=1)


def test_allocation_node_names_are_exact_values_of_the_node_selector():
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    other = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-10"]}]}
    claim = Obj({"status": {"allocation": {"nodeSelector": {"nodeSelectorTerms": [term, other]}}}})
    assert claim.allocation_node_names == ["node-1"]  # "node-1" in str(...) would also match node-10
    assert Obj({"status": {}}).allocation_node_names == []
