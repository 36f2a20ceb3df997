"""The faults ignore-class-config, admin-access-refused-in-use, kubelet-device-mismatch and slow-prepare each
change exactly their behaviour (on temp dirs and, for slow-prepare, over a real unix-socket gRPC channel).
Sources: KEP-5018 (admin access on devices in use); resource.k8s.io/v1 DeviceAllocationConfiguration.source;
KEP-3695 (PodResources reports what NodePrepareResources returned); kubelet defaultClientCallTimeout (45 s)."""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest

from reference_driver import DRIVER_NAME
from reference_driver.claims import ClaimError, ClaimRef
from reference_driver.faults import FAULTS, Faults
from reference_driver.plugin import wire
from reference_driver.plugin.dra import SLOW_PREPARE_S
from reference_driver.plugin.server import PluginServer, SocketPaths
from tests.reference_driver.helpers import claim, config, gpu_config, result, rmtree, short_tmpdir

REF = ClaimRef("ns", "claim-1", "uid-1")
NEW = ("ignore-class-config", "admin-access-refused-in-use", "slow-prepare", "kubelet-device-mismatch")


def _env(state, uid: str = "uid-1") -> list[str]:
    return json.loads(state.store.path(uid).read_text())["devices"][0]["containerEdits"]["env"]


def test_new_faults_are_registered_and_documented():
    """Each new fault is a registry entry of at least one sentence."""
    assert all(len(FAULTS[name]) > 30 for name in NEW)


@pytest.mark.parametrize(
    "faults, sources", [("", "FromClass[0],FromClaim[1]"), ("ignore-class-config", "FromClaim[1]")]
)
def test_ignore_class_config_drops_class_config_only(make_state, source, faults, sources):
    """With ignore-class-config the DeviceClass's config does not reach the CDI env; the claim's still does."""
    source.add(
        claim(
            configs=[
                config(gpu_config(None, env={"FROM_CLASS": "yes"}), source="FromClass"),
                config(gpu_config(None, env={"FROM_CLAIM": "yes"})),
            ]
        )
    )
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    env = _env(state)
    assert f"DRA_GPU_GPU_0_CONFIG_SOURCES={sources}" in env and "FROM_CLAIM=yes" in env, env
    assert ("FROM_CLASS=yes" in env) == (not faults), env


@pytest.mark.parametrize("faults", ["", "admin-access-refused-in-use"])
def test_admin_access_on_a_device_in_use(make_state, source, faults):
    """An adminAccess claim for a device already prepared for another claim is prepared; with the fault it is
    refused naming the device and the claim holding it. A device nobody holds is still prepared."""
    source.add(claim())
    source.add(claim(uid="uid-2", name="admin", results=[result("gpu-0", adminAccess=True)]))
    source.add(claim(uid="uid-3", name="free", results=[result("gpu-1", adminAccess=True)]))
    state = make_state(Faults.parse(faults))
    state.prepare(REF)
    admin = ClaimRef("ns", "admin", "uid-2")
    if faults:
        with pytest.raises(ClaimError, match=r"node-a/gpu-0 is in use by ResourceClaim ns/claim-1 \(injected"):
            state.prepare(admin)
        assert not state.store.exists("uid-2")
    else:
        assert [d.device for d in state.prepare(admin)] == ["gpu-0"]
    assert [d.device for d in state.prepare(ClaimRef("ns", "free", "uid-3"))] == ["gpu-1"]


@pytest.mark.parametrize("faults, reported", [("", "gpu-0"), ("kubelet-device-mismatch", "gpu-1")])
def test_kubelet_device_mismatch_reports_another_device(make_state, source, faults, reported):
    """With kubelet-device-mismatch the device returned to the kubelet is another one of the node while the
    CDI spec and the returned CDI ID stay those of the allocated device."""
    source.add(claim())
    state = make_state(Faults.parse(faults))
    (dev,) = state.prepare(REF)
    assert dev.device == reported and dev.cdi_ids == ("gpu.dra-conformance.test/gpu=uid-1-gpu-0",)
    assert "DRA_GPU_DEVICE_GPU_0=gpu-0" in _env(state)


@pytest.fixture
def slow_plugin(make_state, source):
    """A started PluginServer with slow-prepare on; yields (server, paths); stops it and cleans up."""
    root = short_tmpdir()
    paths = SocketPaths.for_driver(root / "reg", root / "plugins", DRIVER_NAME)
    server = PluginServer(DRIVER_NAME, make_state(Faults.parse("slow-prepare")), paths)
    source.add(claim())
    server.start()
    yield server, paths
    server.stop(0)
    rmtree(root)


def _prepare(paths, timeout: float):
    m = wire.dra_v1()
    req = m.NodePrepareResourcesRequest(claims=[m.Claim(namespace="ns", name="claim-1", uid="uid-1")])
    with grpc.insecure_channel(f"unix://{paths.dra}") as channel:
        fn = channel.unary_unary(
            f"/{m.SERVICE}/NodePrepareResources",
            request_serializer=m.NodePrepareResourcesRequest.SerializeToString,
            response_deserializer=m.NodePrepareResourcesResponse.FromString,
        )
        return fn(req, timeout=timeout)


def test_slow_prepare_outlasts_the_caller_and_prepares_nothing(slow_plugin):
    """The wait is longer than the kubelet's 45 s deadline; a caller with a deadline gets DeadlineExceeded and
    the abandoned call prepares nothing (no CDI spec left behind the kubelet's back)."""
    server, paths = slow_plugin
    assert SLOW_PREPARE_S > 45
    with pytest.raises(grpc.RpcError) as info:
        _prepare(paths, timeout=0.5)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(1.0)  # the handler notices the gone caller within SLOW_POLL_S
    assert not server.state.store.exists("uid-1") and server.state.prepared() == {}


def test_slow_prepare_answers_late_and_normally(slow_plugin):
    """A caller that waits long enough gets the normal answer, only late."""
    server, paths = slow_plugin
    server.services["v1"].slow_prepare_s = 0.5
    start = time.monotonic()
    resp = _prepare(paths, timeout=10)
    assert time.monotonic() - start >= 0.5
    assert [d.device_name for d in resp.claims["uid-1"].devices] == ["gpu-0"] and server.state.store.exists("uid-1")


def test_slow_prepare_does_not_delay_stopping(slow_plugin):
    """Stopping the plugin ends a waiting prepare at once: stop() returns within seconds, not after 50 s."""
    server, paths = slow_plugin
    errors: list[Exception] = []
    caller = threading.Thread(target=lambda: _call_catching(paths, errors))
    caller.start()
    time.sleep(0.5)
    start = time.monotonic()
    server.stop(0)
    caller.join(10)
    assert time.monotonic() - start < 5 and not caller.is_alive(), errors
    assert not server.state.store.exists("uid-1")


def _call_catching(paths, errors: list[Exception]) -> None:
    try:
        _prepare(paths, timeout=30)
    except grpc.RpcError as err:
        errors.append(err)
