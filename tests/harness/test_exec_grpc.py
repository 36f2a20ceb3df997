"""The helper pods' gRPC relay (conformance/node/exec_grpc.py) run for real: the relay program runs as a
separate Python process (as ``kubectl exec`` runs it in the helper pod) against a real gRPC server on a unix
socket, and the harness's own PodResources client and registration GetInfo go through it unchanged. The
servers are small servicers of the generated stubs (unit tests), the transport and serialization are real."""

from __future__ import annotations

import subprocess
import sys
from concurrent import futures

import grpc
import pytest

from conformance.node import exec_grpc, registration
from conformance.node import pluginregistration_v1_pb2 as reg_pb
from conformance.node import podresources_v1_pb2 as pb
from conformance.node import podresources_v1_pb2_grpc as pb_grpc
from conformance.node.helper_pod import GRPC_CONTAINER, helper_pod
from conformance.node.podresources import PodResourcesClient, PodResourcesError


class _Lister(pb_grpc.PodResourcesListerServicer):
    def List(self, request, context):  # noqa: N802 - gRPC method name
        return pb.ListPodResourcesResponse(pod_resources=[pb.PodResources(name="p", namespace="ns")])

    def Get(self, request, context):  # noqa: N802
        context.abort(grpc.StatusCode.NOT_FOUND, f"pod {request.pod_name} in namespace {request.pod_namespace}")


def _registration_handler():
    def get_info(request, context):
        return reg_pb.PluginInfo(type="DRAPlugin", name="gpu.example.com", endpoint="/x/dra.sock")

    method = grpc.unary_unary_rpc_method_handler(
        get_info,
        request_deserializer=reg_pb.InfoRequest.FromString,
        response_serializer=reg_pb.PluginInfo.SerializeToString,
    )
    return grpc.method_handlers_generic_handler("pluginregistration.Registration", {"GetInfo": method})


@pytest.fixture
def socket(tmp_path):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(_Lister(), server)
    server.add_generic_rpc_handlers((_registration_handler(),))
    path = tmp_path / "kubelet.sock"
    server.add_insecure_port(f"unix://{path}")
    server.start()
    yield str(path)
    server.stop(0)


def _exec(argv: list[str]) -> str:
    """What ``kubectl exec`` of ``argv`` in the grpc container returns: stdout and stderr together."""
    assert argv[0] == exec_grpc.PYTHON
    proc = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=60)
    return proc.stdout + proc.stderr


def _dial(socket, options=()):
    return exec_grpc.ExecChannel(_exec, str(socket))


def test_podresources_list_through_the_relay(socket):
    # given: a PodResources server on a unix socket; when: the harness client calls List through the relay
    listed = PodResourcesClient(socket, dial=_dial).list()
    # then: the reply is the server's, decoded by the harness's own messages
    assert listed == [{"name": "p", "namespace": "ns"}], listed


def test_relayed_error_keeps_grpc_status(socket):
    # when: the server refuses Get; then: the client raises with the server's status code and message
    with pytest.raises(PodResourcesError) as info:
        PodResourcesClient(socket, dial=_dial).get("gone", "ns")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND and "pod gone in namespace ns" in info.value.details()


def test_registration_get_info_through_the_relay(socket):
    assert registration.get_info(socket, dial=_dial)["name"] == "gpu.example.com"


def test_relay_without_answer_names_the_output():
    # given: an image without grpcio (the relay program cannot run); then: UNKNOWN with the helper's output
    with pytest.raises(exec_grpc.RelayError) as info:
        exec_grpc.parse_reply("ModuleNotFoundError: No module named 'grpc'")
    assert info.value.code() == grpc.StatusCode.UNKNOWN and "No module named 'grpc'" in info.value.details()


def test_helper_pod_has_a_relay_container_only_with_an_image():
    without = helper_pod("h", "ns", "n", "busybox", "r1")
    with_relay = helper_pod("h", "ns", "n", "busybox", "r1", grpc_image="img:1")
    assert [c["name"] for c in without["spec"]["containers"]] == ["helper"]
    relay = with_relay["spec"]["containers"][1]
    assert relay["name"] == GRPC_CONTAINER and relay["image"] == "img:1" and relay["securityContext"]["privileged"]


def _node(*images: str):
    from conformance.core.objects import Obj  # noqa: PLC0415

    return Obj({"kind": "Node", "status": {"images": [{"names": [f"{i}@sha256:00", i]} for i in images]}})


def test_existing_cluster_uses_offline_images_only_when_every_node_has_them():
    from conformance_lab.toolchain.images import reference_image  # noqa: PLC0415

    from conformance.clusters.existing import choose_images  # noqa: PLC0415

    relay = reference_image.ref()
    both = _node("dra-conformance.local/busybox:1", relay)
    assert choose_images([both, both]) == {"busybox": "dra-conformance.local/busybox:1", "grpc": relay}
    assert choose_images([both, _node("dra-conformance.local/busybox:1")])["grpc"] == ""
    assert choose_images([_node()]) == {"busybox": "busybox:1.36", "grpc": ""}


@pytest.mark.parametrize(
    ("answer", "able"), [("active", True), ("inactive", False), ("sh: systemctl: not found", False)]
)
def test_kubelet_restart_is_offered_only_for_an_active_systemd_unit(answer, able):
    from conformance.node.helper_pod import HelperPodNodeAccess  # noqa: PLC0415

    access = HelperPodNodeAccess(None, ["n0", "n1"], "r1")
    access.pods = {"n0": "helper-0", "n1": "helper-1"}
    access._exec = lambda node, script: (answer if "is-active kubelet" in script else "") + "\n"
    ok, evidence = access.can_restart_kubelet()
    assert ok is able and answer in evidence, evidence


def test_our_helper_images_are_pinned_by_the_digest_every_node_reports():
    """Issue 27 §4: the helper pods' images (ours) are pinned by digest when every node reports the same digest
    name for them in Node.status.images; a digest that differs between nodes, or none, keeps the tag."""
    from conformance.clusters.existing import pinned  # noqa: PLC0415
    from conformance.core.objects import Obj  # noqa: PLC0415

    def node(digest: str):
        names = [f"dra-conformance.local/busybox@sha256:{digest}", "dra-conformance.local/busybox:1"]
        return Obj(
            {"kind": "Node", "status": {"images": [{"names": names}, {"names": ["other@sha256:ff", "other:1"]}]}}
        )

    tag = "dra-conformance.local/busybox:1"
    assert pinned([node("aa"), node("aa")], tag) == "dra-conformance.local/busybox@sha256:aa"
    assert pinned([node("aa"), node("bb")], tag) == tag
    assert pinned([_node(tag), Obj({"kind": "Node", "status": {}})], tag) == tag
