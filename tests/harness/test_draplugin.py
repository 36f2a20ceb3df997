"""The harness's DRAPlugin client against the reference driver's real plugin server over unix sockets (so
both ends' protos are checked against each other): endpoint choice from GetInfo, prepare/unprepare entries,
the ``prepared`` bookkeeping, wire-contract errors, and LocalNodeAccess reaching the advertised socket."""

from __future__ import annotations

from concurrent import futures
from types import SimpleNamespace

import grpc
import pytest
from conformance_lab.local.node_access import LocalNodeAccess

from conformance.node import draplugin
from conformance.node.draplugin import ClaimRef, DraPluginClient, DraPluginError
from reference_driver import DRIVER_NAME
from reference_driver.cdi import CdiStore
from reference_driver.checkpoint import Checkpoint
from reference_driver.faults import Faults
from reference_driver.inventory import SimulatedInventory, SimulatedSpec
from reference_driver.plugin.server import PluginServer, SocketPaths
from reference_driver.state import DeviceState
from tests.reference_driver.helpers import NODE, FakeClaimSource, claim, rmtree, short_tmpdir

CLAIM = ClaimRef("ns", "claim-1", "uid-1")


@pytest.fixture
def plugin():
    """A started reference PluginServer with claim ``ns/claim-1`` (UID uid-1, device gpu-0) in its API."""
    root = short_tmpdir()
    paths = SocketPaths.for_driver(root / "reg", root / "plugins", DRIVER_NAME)
    inventory = SimulatedInventory(SimulatedSpec(count=2), NODE)
    state = DeviceState(
        DRIVER_NAME,
        {NODE},
        inventory.snapshot,
        FakeClaimSource(claim()),
        CdiStore(root / "cdi"),
        Checkpoint(root / "state" / "checkpoint.json"),
    )
    server = PluginServer(DRIVER_NAME, state, paths)
    server.start()
    yield SimpleNamespace(paths=paths, root=root, state=state)
    server.stop(0)
    rmtree(root)


def test_endpoint_prefers_v1_and_falls_back_to_v1beta1():
    info = {"type": "DRAPlugin", "name": "d", "endpoint": "/p/dra.sock"}
    both = [{**info, "supported_versions": ["v1beta1.DRAPlugin", "v1.DRAPlugin"]}]
    assert draplugin.endpoint_of(both, "d") == ("/p/dra.sock", "v1")
    assert draplugin.endpoint_of([{**info, "supported_versions": ["v1beta1.DRAPlugin"]}], "d")[1] == "v1beta1"
    for infos in ([{**info, "supported_versions": ["v1alpha4.DRAPlugin"]}], both, [{"socket": "x", "error": "x"}]):
        with pytest.raises(DraPluginError, match="no DRAPlugin of driver 'other' .* on node n0"):
            draplugin.endpoint_of(infos, "other", "n0")


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_prepare_unprepare_entries_and_bookkeeping(plugin, version):
    client = DraPluginClient(plugin.paths.dra, version, driver=DRIVER_NAME, node=NODE)
    assert client.serving()
    first = client.prepare(CLAIM)
    assert first.error == "" and first.device_names == {(NODE, "gpu-0")} and len(first.cdi_ids) == 1
    assert client.prepare(CLAIM) == first and client.prepared == [CLAIM]
    wrong = client.prepare(CLAIM, uid=draplugin.replaced_uid(CLAIM.uid))
    assert "got replaced" in wrong.error and wrong.devices == () and client.prepared == [CLAIM]
    assert client.unprepare(CLAIM).error == "" and client.prepared == []
    assert client.unprepare(ClaimRef("ns", "never", "uid-never")).error == ""


def test_replaced_uid_differs_and_is_stable():
    assert draplugin.replaced_uid("uid-1") == draplugin.replaced_uid("uid-1") != "uid-1"


def test_wire_failures_raise_named_errors(tmp_path):
    dead = DraPluginClient(tmp_path / "missing.sock", timeout=1)
    assert not dead.serving()
    with pytest.raises(DraPluginError, match="NodePrepareResources on DraPluginClient.*UNAVAILABLE"):
        dead.prepare(CLAIM)
    with pytest.raises(ValueError, match="v1alpha4"):
        DraPluginClient(tmp_path / "x.sock", "v1alpha4")


def test_answer_without_the_claim_entry_is_an_error():
    """A driver answering no entry for a requested UID breaks the contract (the kubelet counts it failed)."""
    root = short_tmpdir()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    empty = grpc.unary_unary_rpc_method_handler(lambda request, context: b"", response_serializer=lambda b: b)
    service = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {"NodePrepareResources": empty}),))
    server.add_insecure_port(f"unix://{root}/dra.sock")
    server.start()
    try:
        with pytest.raises(DraPluginError, match="no entry for claim UID uid-1"):
            DraPluginClient(root / "dra.sock").prepare(CLAIM)
    finally:
        server.stop(None)
        rmtree(root)


def test_local_node_access_dials_the_advertised_endpoint(plugin):
    node = SimpleNamespace(name=NODE, plugin_registry_dir=str(plugin.paths.registration.parent))
    access = LocalNodeAccess(SimpleNamespace(nodes=[node]))
    client = access.dra_plugin(NODE, DRIVER_NAME)
    assert (client.socket, client.version) == (str(plugin.paths.dra), "v1") and client.serving()
    with pytest.raises(DraPluginError, match="no DRAPlugin of driver 'other.example.com'"):
        access.dra_plugin(NODE, "other.example.com")


def test_prepare_all_and_unprepare_all_answer_each_claim_of_one_call(plugin):
    """One call naming two claims: ``prepare_all`` gives each UID its entry (the second, unknown to the API,
    its error), ``unprepare_all`` success for both; a driver answering the first claim only is an error of the
    client naming the missing UID (fault multi-claim-first-only)."""
    client = DraPluginClient(plugin.paths.dra, "v1", driver=DRIVER_NAME, node=NODE)
    other = ClaimRef("ns", "claim-2", "uid-2")
    prepared = client.prepare_all([CLAIM, other])
    assert prepared["uid-1"].device_names == {(NODE, "gpu-0")} and prepared["uid-1"].error == ""
    assert "not found" in prepared["uid-2"].error and client.prepared == [CLAIM]
    assert {uid: e.error for uid, e in client.unprepare_all([CLAIM, other]).items()} == {"uid-1": "", "uid-2": ""}
    assert client.prepared == []
    plugin.state.faults = Faults.parse("multi-claim-first-only")
    with pytest.raises(DraPluginError, match="no entry for claim UID uid-2"):
        client.prepare_all([CLAIM, other])


def test_calls_are_timed_in_one_place_direct_and_relayed(plugin, tmp_path):
    # given: the suite's timing sink on; when: prepare/unprepare go to a real plugin, dialed and relayed
    from conformance.node import call_timing  # noqa: PLC0415
    from tests.harness.test_exec_grpc import _dial as relay_dial  # noqa: PLC0415

    call_timing.configure(tmp_path)
    try:
        client = DraPluginClient(plugin.paths.dra, "v1", driver=DRIVER_NAME, node=NODE)
        assert client.serving()  # a probe naming no claim: not driver work, not timed
        client.prepare(CLAIM)
        relayed = DraPluginClient(plugin.paths.dra, "v1", driver=DRIVER_NAME, node=NODE, dial=relay_dial)
        relayed.unprepare(CLAIM)
    finally:
        call_timing.configure(None)
    # then: one line per call; the relayed figure is the relay's in-process one, not the exec round trip
    rows = call_timing.load(tmp_path)
    assert [(r["method"], r["via"], r["ok"], r["driver"], r["node"]) for r in rows] == [
        ("NodePrepareResources", "direct", True, DRIVER_NAME, NODE),
        ("NodeUnprepareResources", "relay", True, DRIVER_NAME, NODE),
    ]
    assert all(0 < r["s"] < 5 for r in rows), rows
