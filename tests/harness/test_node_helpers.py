"""Unit tests of node-side helpers without a cluster: plugin registration GetInfo over a real unix socket
(served by the reference driver's registration service, so both ends' protos are checked against each
other), PodResources errors and reshaping, and CDI spec reading (the visibility probe: test_probe.py)."""

import shutil
import tempfile
from concurrent import futures
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest
from conformance_lab.local.node_access import LocalNodeAccess

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.node import cdi, registration
from conformance.node.podresources import (
    PodResourcesClient,
    PodResourcesError,
    allocated_devices,
    claims_by_container,
    reported_cdi_ids,
    reported_devices,
)


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


def test_cdi_ids_belong_to_the_claim_own_spec_or_a_driver_wide_one():
    """A claim's CDI IDs come from its own spec (UID in the file) plus driver-wide specs (no UID, like
    dra-example-driver's ``common``); another claim's ID or an undefined one is refused, and so is a set
    with nothing from the claim's own spec."""
    import types

    from conformance.node import cdi as cdimod

    mine, other = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
    specs = {
        f"k8s.gpu.example.com-{mine}.json": '{"kind": "k8s.gpu.example.com/gpu", "devices": [{"name": "a"}]}',
        f"k8s.gpu.example.com-{other}.json": '{"kind": "k8s.gpu.example.com/gpu", "devices": [{"name": "b"}]}',
        "k8s.gpu.example.com-common.json": '{"kind": "k8s.gpu.example.com/gpu", "devices": [{"name": "common"}]}',
    }
    access = types.SimpleNamespace(cdi_specs=lambda node: specs)
    claim = types.SimpleNamespace(uid=mine, name="c")
    kind = "k8s.gpu.example.com/gpu"
    assert cdimod.ids_belong_to(access, "n", claim, {f"{kind}=a", f"{kind}=common"})[0]
    assert not cdimod.ids_belong_to(access, "n", claim, {f"{kind}=a", f"{kind}=b"})[0]
    assert not cdimod.ids_belong_to(access, "n", claim, {f"{kind}=a", f"{kind}=zzz"})[0]
    ok, evidence = cdimod.ids_belong_to(access, "n", claim, {f"{kind}=common"})
    assert not ok and "own spec: ['k8s.gpu.example.com/gpu=a']" in evidence


def test_claim_bound_specs_are_those_of_the_kinds_naming_a_claim():
    """``claim_bound`` keeps the specs of the given kinds with a UID (a claim's), not a driver-wide one nor
    another kind's; ``kind_of`` reads the kind, ``?`` for a text that is no CDI spec."""
    from conformance.node import cdi as cdimod

    uid = "11111111-2222-3333-4444-555555555555"
    specs = {
        f"k8s.gpu.example.com-{uid}.json": '{"kind": "k8s.gpu.example.com/gpu"}',
        "k8s.gpu.example.com-common.json": '{"kind": "k8s.gpu.example.com/gpu"}',
        f"other-{uid}.json": '{"kind": "other.example.com/nic"}',
    }
    assert set(cdimod.claim_bound(specs, {"k8s.gpu.example.com/gpu"})) == {f"k8s.gpu.example.com-{uid}.json"}
    assert cdimod.kind_of("not: [a spec") == "?"
