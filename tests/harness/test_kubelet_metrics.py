"""Unit tests of conformance.node.kubelet (kubelet metrics about DRA plugins), conformance.k8s.prometheus and
the plugin_registration capability probe (conformance.node.registration.access), on hand-written text."""

import pytest
from conformance_lab.kind import node_access as kind

from conformance.k8s.prometheus import samples
from conformance.node import kubelet, registration
from conformance.node.base import NodeAccessUnavailable

DRIVER = "gpu.example.com"
V1BETA1_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources"
REGISTRY = "/var/lib/kubelet/plugins_registry"


def _plugins(socket, state):
    return f'plugin_manager_total_plugins{{socket_path="{REGISTRY}/{socket}",state="{state}"}} 1'


def _calls(driver, code, method, count):
    labels = f'driver_name="{driver}",grpc_status_code="{code}",method_name="{method}"'
    return f"dra_grpc_operations_duration_seconds_count{{{labels}}} {count}"


METRICS = "\n".join(
    [
        "# HELP plugin_manager_total_plugins [ALPHA] Number of plugins in Plugin Manager",
        "# TYPE plugin_manager_total_plugins gauge",
        _plugins(f"{DRIVER}-reg.sock", "actual_state_of_world"),
        _plugins("other-reg.sock", "desired_state_of_world"),
        _calls(DRIVER, "OK", kubelet.PREPARE_V1, 3),
        _calls(DRIVER, "Unknown", kubelet.PREPARE_V1, 2),
        _calls("other", "OK", kubelet.PREPARE_V1, 7),
        _calls(DRIVER, "OK", V1BETA1_PREPARE, 1),
        'kubernetes_feature_enabled{name="DynamicResourceAllocation",stage=""} 1',
    ]
)


def test_samples_read_labels_and_values_of_one_metric():
    assert samples(METRICS, "kubernetes_feature_enabled") == [({"name": "DynamicResourceAllocation", "stage": ""}, 1.0)]
    assert samples(METRICS, "plugin_manager_total") == []  # exact names only


def test_accepted_sockets_are_the_actual_state_of_world_only():
    accepted = kubelet.accepted_sockets(METRICS)
    assert accepted == [f"/var/lib/kubelet/plugins_registry/{DRIVER}-reg.sock"]
    assert kubelet.accepts_socket(accepted, f"{DRIVER}-reg.sock")
    assert not kubelet.accepts_socket(accepted, "other-reg.sock")  # desired, not registered
    assert not kubelet.accepts_socket(accepted, "reg.sock")  # file names compare exactly, not as suffixes


def test_dra_calls_count_successful_calls_per_method_for_one_driver():
    calls = kubelet.DraCalls.parse(METRICS, "n1", DRIVER)
    assert calls.counts == {kubelet.PREPARE_V1: 3.0, V1BETA1_PREPARE: 1.0}
    later = kubelet.DraCalls.parse(METRICS + "\n" + _calls(DRIVER, "OK", V1BETA1_PREPARE, 3), "n1", DRIVER)
    assert later.since(calls) == {V1BETA1_PREPARE: 3.0}  # the v1 count did not grow


class _Access:
    mode = "fake"

    def __init__(self, answer):
        self.answer = answer

    def plugin_info(self, node):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_registration_access_is_decided_by_the_access_mode_not_the_driver():
    assert registration.access(_Access([]), "n1") == (True, "node access fake reached 0 registration socket(s) on n1")
    able, why = registration.access(_Access(NodeAccessUnavailable("no gRPC client")), "n1")
    assert not able and "no gRPC client" in why


def test_kind_plugin_info_without_docker_is_unavailable_not_an_error(monkeypatch):
    monkeypatch.setattr(kind.shutil, "which", lambda name: None)
    with pytest.raises(NodeAccessUnavailable, match="docker is not installed"):
        kind.KindNodeAccess(["kind-worker"]).plugin_info("kind-worker")
