"""Unit tests of node-side helpers without a cluster: plugin registration GetInfo over a real unix socket
(served by the reference driver's registration service, so both ends' protos are checked against each
other), PodResources errors and reshaping, CDI spec reading, and the visibility probe's log fallback."""

import shutil
import tempfile
from concurrent import futures
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

from conformance.core import errors
from conformance.core.profile import Visibility
from conformance.k8s.objects import Obj
from conformance.node import cdi, registration
from conformance.node.local import LocalNodeAccess
from conformance.node.podresources import (
    PodResourcesClient,
    PodResourcesError,
    allocated_devices,
    claims_by_container,
    reported_cdi_ids,
    reported_devices,
)
from conformance.node.probe import Probe


@pytest.fixture
def registry():
    """A short temp dir (unix socket paths are limited to ~107 bytes) with one answering plugin socket and
    one dead socket file."""
    from reference_driver.plugin.registration import RegistrationService  # noqa: PLC0415

    directory = Path(tempfile.mkdtemp(prefix="reg", dir="/tmp"))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((RegistrationService("gpu.example.com", "/plugins/x/dra.sock").handler(),))
    server.add_insecure_port(f"unix://{directory}/gpu.example.com-reg.sock")
    server.start()
    (directory / "stale.sock").write_text("")
    yield directory
    server.stop(None)
    shutil.rmtree(directory, ignore_errors=True)


def test_get_info_decodes_the_plugin_info(registry):
    info = registration.get_info(registry / "gpu.example.com-reg.sock")
    assert info == {
        "type": "DRAPlugin",
        "name": "gpu.example.com",
        "endpoint": "/plugins/x/dra.sock",
        "supported_versions": ["v1.DRAPlugin", "v1beta1.DRAPlugin"],
    }


def test_local_node_access_asks_every_registry_socket(registry):
    node = SimpleNamespace(
        name="n0",
        plugin_registry_dir=str(registry),
        cdi_dir=str(registry),
        kubeconfig=str(registry / "k"),
        pod_resources_socket=str(registry / "pr.sock"),
    )
    answers = LocalNodeAccess(SimpleNamespace(nodes=[node])).plugin_info("n0")
    assert [a.get("name") for a in answers] == ["gpu.example.com", None]
    assert answers[0]["socket"] == "gpu.example.com-reg.sock" and answers[1]["error"].startswith("StatusCode.")


def test_podresources_call_errors_are_typed(tmp_path):
    client = PodResourcesClient(tmp_path / "missing.sock", timeout=1)
    with pytest.raises(PodResourcesError) as error:
        client.list()
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE and error.value.details()
    assert isinstance(error.value, errors.ConformanceError) and isinstance(error.value, grpc.RpcError)


def test_podresources_reshaping_per_container():
    entry = {
        "name": "p",
        "containers": [
            {
                "name": "user",
                "dynamicResources": [
                    {
                        "claimName": "c",
                        "claimResources": [
                            {
                                "driverName": "d",
                                "poolName": "n1",
                                "deviceName": "gpu-0",
                                "cdiDevices": [{"name": "k=gpu-0"}],
                            }
                        ],
                    }
                ],
            },
            {"name": "other"},
        ],
    }
    per = claims_by_container(entry)
    assert per["other"] == [] and reported_devices(per["user"]) == {("d", "n1", "gpu-0")}
    assert reported_cdi_ids(per["user"]) == {"k=gpu-0"}
    claim = Obj(
        {
            "status": {
                "allocation": {
                    "devices": {"results": [{"request": "r", "driver": "d", "pool": "n1", "device": "gpu-0"}]}
                }
            }
        }
    )
    assert allocated_devices(claim) == reported_devices(per["user"])


def test_cdi_specs_of_a_claim_and_defined_ids():
    specs = {
        "d-uid1.json": '{"kind": "k.com/gpu", "devices": [{"name": "a"}]}',
        "other.yaml": "kind: k.com/gpu\ndevices:\n- name: b\n",
    }
    access = SimpleNamespace(cdi_specs=lambda node: specs)
    assert cdi.claim_specs(access, "n", SimpleNamespace(uid="uid1")) == {"d-uid1.json": specs["d-uid1.json"]}
    assert cdi.defined_ids(access, "n") == {"k.com/gpu=a", "k.com/gpu=b"}


class _K8s:
    def __init__(self, fail: bool):
        self.fail = fail

    def logs(self, pod, container=None, retry=True):
        if self.fail:
            raise errors.ApiError(502, "BadGateway", "kubelet unreachable", {}, "GET")
        return "GPU_DEVICE_0=gpu-0\nGPU_DEVICE_1=gpu-1\nOPAQUE=1\n"

    def get(self, kind, name, namespace):
        return Obj(
            {"metadata": {"name": name, "uid": "u1"}, "spec": {"nodeName": "n1", "containers": [{"name": "ctr"}]}}
        )


def _profile():
    return SimpleNamespace(
        visibility=Visibility(env_regex=r"^GPU_DEVICE_\d+=\S+$"),
        opaque_shows_as="^OPAQUE=",
        admin_access_signal="^ADMIN=",
    )


def test_probe_counts_devices_and_names_them():
    probe, pod = Probe(_K8s(False), _profile()), Obj({"metadata": {"name": "p", "namespace": "ns"}})
    assert probe.hits(pod) == ["GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-1"]
    assert probe.shows_devices(pod, ["gpu-0", "gpu-1"], ["gpu-0", "gpu-1", "gpu-2"])[0]
    assert not probe.shows_devices(pod, ["gpu-0"], ["gpu-0", "gpu-1"])[0]
    assert probe.shows_config(pod) and not probe.shows_admin_access(pod) and probe.sees(pod)[0]


def test_probe_falls_back_to_the_node_log_and_says_so():
    access = SimpleNamespace(container_log=lambda node, ns, pod, uid, ctr: f"GPU_DEVICE_0={node}-{uid}-{ctr}\n")
    pod = Obj({"metadata": {"name": "p", "namespace": "ns"}})
    visible, evidence = Probe(_K8s(True), _profile(), access).sees(pod)
    assert visible and "GPU_DEVICE_0=n1-u1-ctr" in evidence and "pods/log failed with 502" in evidence
    with pytest.raises(errors.ApiError):
        Probe(_K8s(True), _profile(), None).sees(pod)


def test_probe_shows_allocation_compares_the_claims_devices_on_the_pods_node():
    probe = Probe(_K8s(False), _profile())
    inventory = SimpleNamespace(names_on=lambda node: {"n1": ["gpu-0", "gpu-1", "gpu-2"]}.get(node, []))

    def claim(*devices):
        results = [{"driver": "d", "pool": "n1", "device": d, "request": "gpu"} for d in devices]
        return Obj({"metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": results}}}})

    bound = Obj({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}})
    assert probe.shows_allocation(bound, claim("gpu-0", "gpu-1"), inventory)[0]
    ok, evidence = probe.shows_allocation(bound, claim("gpu-2"), inventory)
    assert not ok and "gpu-2" in evidence
    with pytest.raises(ValueError, match="no spec.nodeName"):
        probe.shows_allocation(Obj({"metadata": {"name": "p", "namespace": "ns"}}), claim("gpu-2"), inventory)
