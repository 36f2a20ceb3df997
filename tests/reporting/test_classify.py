"""The failure-class table (driver defect / infrastructure / suite error)."""

from __future__ import annotations

import pytest
import yaml

from conformance.core import errors
from conformance.reporting import classify


@pytest.mark.parametrize(
    "exc, expected",
    [
        (AssertionError("x"), classify.DRIVER_DEFECT),
        (errors.WaitFailed("claim allocated", 30, failed="pod Failed"), classify.DRIVER_DEFECT),
        (errors.WaitTimeout("claim allocated", 30, party=errors.DRIVER), classify.DRIVER_DEFECT),
        (errors.WaitTimeout("ServiceAccount ns/default created", 30, party=errors.CLUSTER), classify.INFRASTRUCTURE),
        (errors.WaitTimeout("something", 30), classify.INFRASTRUCTURE),  # a wait that could not tell
        (
            errors.ProbeCommandFailed("ns/p", "ctr", "ls /dev/kfd", "the command failed (exit status 2)", "", 2),
            classify.DRIVER_DEFECT,
        ),
        (errors.ProbeDidNotRun("ns/p", "ctr", "ls", "no end marker within 60s"), classify.SUITE_ERROR),
        (errors.ClusterUnavailable("no API server"), classify.INFRASTRUCTURE),
        (ConnectionRefusedError(), classify.INFRASTRUCTURE),
        (errors.ConfigError("bad", source="--profile"), classify.SUITE_ERROR),
        (KeyError("spec"), classify.SUITE_ERROR),
    ],
)
def test_exceptions_map_to_one_class(exc, expected):
    assert classify.classify(exc) == expected


def test_messages_of_foreign_results_are_classified():
    assert (
        classify.classify_message("conformance.core.errors.WaitTimeout: timed out", "broken") == classify.INFRASTRUCTURE
    )
    assert classify.classify_message("ValueError: x", "broken") == classify.SUITE_ERROR
    assert classify.classify_message("", "failed") == classify.DRIVER_DEFECT
    assert classify.classify_message("whatever", "passed") is None


def test_allure2_category_regexes_match_their_classes():
    import re

    cats = {c["name"]: c for c in classify.allure2_categories() if "messageRegex" in c}
    assert re.match(
        cats["Cluster / infrastructure errors"]["messageRegex"], "conformance.core.errors.ClusterUnavailable: down"
    )
    assert not re.match(cats["Driver defects"]["messageRegex"], "conformance.core.errors.ClusterUnavailable: x")


def test_a_failed_wait_is_not_a_timeout_and_both_are_wait_errors():
    failed = errors.WaitFailed("pod running", 30, failed="pod Failed")
    timeout = errors.WaitTimeout("pod running", 30)
    assert not isinstance(failed, errors.WaitTimeout) and not isinstance(timeout, errors.WaitFailed)
    assert isinstance(failed, errors.WaitError) and isinstance(timeout, errors.WaitError)
    assert "while waiting for pod running: pod Failed" in str(failed) and "timed out after 30s" in str(timeout)
    assert (
        classify.classify_message("conformance.core.errors.WaitFailed: while waiting", "failed")
        == classify.DRIVER_DEFECT
    )


# containerd v2.2.9's wording (internal/cri/server/container_start.go, core/runtime/v2/task_manager.go,
# shim_manager.go), as the v1.37.2 standard run of session 14 showed it
SHIM = (
    "failed to create containerd task: failed to start shim: start failed: dial unix "
    "/run/containerd/s/3f2a: connect: ttrpc: no such file or directory: unknown"
)
CDI = (
    "failed to create containerd container: CDI device injection failed: unresolvable CDI devices "
    "gpu.dra-conformance.test/claim-0a1b=gpu-0"
)


def _pod_state(waiting: dict | None = None, terminated: dict | None = None) -> str:
    state = {"waiting": waiting} if waiting else {"terminated": terminated}
    status = {"phase": "Failed" if terminated else "Pending", "containerStatuses": [{"name": "ctr", "state": state}]}
    return yaml.safe_dump({"ref": "Pod ns/p", "status": status})


def test_a_pod_wait_ended_by_the_runtimes_shim_start_error_is_infrastructure():
    """The runtime failing to start a container's shim (status StartError, kubelet event 'Error: ...') is the
    cluster's, not the driver's (session 14, v1.37.2: one test counted as a driver failure)."""
    by_status = errors.WaitFailed(
        "pod ns/p Running",
        120,
        _pod_state(terminated={"reason": "StartError", "message": SHIM, "exitCode": 128}),
        failed="pod phase Failed:",
    )
    by_event = errors.WaitFailed(
        "pod ns/p Running",
        120,
        _pod_state(waiting={"reason": "ContainerCreating"}),
        [f"Warning Failed Pod/p: Error: {SHIM} (x2)"],
        failed="pod phase Failed:",
    )
    for exc in (by_status, by_event):
        assert classify.runtime_shim_failure(exc) == SHIM
        assert classify.classify(exc) == classify.INFRASTRUCTURE


def test_a_cdi_injection_refusal_stays_a_driver_defect_even_beside_a_shim_error():
    """containerd refusing the driver's CDI devices is the driver's answer (breaker s14 B7), also when a shim
    start error of another attempt shows in the same pod; and text that merely contains the shim words (a CDI
    hook's stderr inside an OCI runtime error) is not the runtime's shim start."""
    refused = errors.WaitFailed(
        "pod ns/p Running",
        120,
        _pod_state(waiting={"reason": "CreateContainerError", "message": CDI}),
        [f"Warning Failed Pod/p: Error: {CDI}"],
        failed=f"the container runtime refused the pod's container over the driver's CDI/NRI: Pod/p: {CDI}",
    )
    both = errors.WaitFailed(
        "pod ns/p Running",
        120,
        _pod_state(terminated={"reason": "StartError", "message": SHIM}),
        [f"Warning Failed Pod/p: Error: {CDI}", f"Warning Failed Pod/p: Error: {SHIM}"],
        failed="pod phase Failed:",
    )
    hook = (
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: error running "
        f"hook #0: stderr: {SHIM}"
    )
    forged = errors.WaitFailed(
        "pod ns/p Running", 120, _pod_state(terminated={"reason": "StartError", "message": hook}), failed="x"
    )
    prepare = errors.WaitFailed(
        "pod ns/p Running",
        120,
        "",
        [f"Warning FailedPrepareDynamicResources Pod/p: {SHIM}"],
        failed="kubelet could not prepare the pod's claims",
    )
    for exc in (refused, both, forged, prepare):
        assert classify.runtime_shim_failure(exc) == ""
        assert classify.classify(exc) == classify.DRIVER_DEFECT


def test_a_driver_answer_breaking_the_plugin_contract_is_a_driver_defect():
    """DraPluginError: the driver's own DRAPlugin socket answered without the claim's entry or with an error
    status (s15 breaker C2: it was a suite error, "ours: please report it")."""
    from conformance.node.draplugin import DraPluginError

    exc = DraPluginError("NodePrepareResources answer of X has no entry for claim UID u")
    assert classify.classify(exc) == classify.DRIVER_DEFECT


def test_our_relay_giving_no_answer_is_not_the_drivers():
    """s16 breaker F2: the helper pod's relay printed no answer (exec refused, no Python in the image): not a
    status of the driver's socket, so neither the driver's defect nor a per-claim answer."""
    from conformance.node import exec_grpc
    from conformance.node.draplugin import DraPluginClient, PluginRelayError

    class Lost:  # a channel whose relay printed only the runtime's refusal
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def unary_unary(self, *_a, **_kw):
            return lambda *_a, **_kw: exec_grpc.parse_reply("OCI runtime exec failed")

    class Request:
        claims = ()

        def SerializeToString(self):  # noqa: N802 - the protobuf method name
            return b""

    class Reply:
        FromString = staticmethod(bytes)  # noqa: N815 - the protobuf method name

    client = DraPluginClient("/x.sock", driver="gpu.example.com", node="n1", dial=lambda _s: Lost())
    with pytest.raises(PluginRelayError) as raised:
        client._call("NodeUnprepareResources", Request(), Reply, refusal_as_reply=True)
    assert classify.classify(raised.value) == classify.INFRASTRUCTURE
    assert "relay gave no answer" in str(raised.value)


def _pull_state(reason: str) -> str:
    status = {"containerStatuses": [{"name": "ctr", "state": {"waiting": {"reason": reason, "message": "not found"}}}]}
    return yaml.safe_dump({"ref": "Pod ns/p", "status": status})


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"])
def test_a_pod_wait_on_an_image_the_node_cannot_pull_is_infrastructure(reason):
    """A timeout is the driver's (what it must bring about did not come) unless the pod waited on its image."""
    exc = errors.WaitTimeout("pod ns/p Running", 60, _pull_state(reason))
    assert classify.classify(exc) == classify.INFRASTRUCTURE
    assert classify.image_pull_failure(exc) == f"{reason}: not found"


def test_a_pod_wait_timeout_on_a_container_still_creating_is_the_drivers():
    exc = errors.WaitTimeout("pod ns/p Running", 60, _pull_state("ContainerCreating"), party=errors.DRIVER)
    assert classify.image_pull_failure(exc) == ""
    assert classify.classify(exc) == classify.DRIVER_DEFECT


def _pod(node: str = "", scheduled: str | None = None, waiting: str = "") -> object:
    from conformance.core.objects import Obj

    status: dict = {"conditions": []}
    if scheduled is not None:
        status["conditions"].append({"type": "PodScheduled", "status": "False", "message": scheduled})
    if waiting:
        status["containerStatuses"] = [{"name": "ctr", "state": {"waiting": {"reason": waiting}}}]
    return Obj(
        {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": node}, "status": status}
    )


@pytest.mark.parametrize(
    "pod, events, party",
    [
        (_pod(node="n1", waiting="ContainerCreating"), [], errors.DRIVER),  # on its node: prepare / CDI / start
        (_pod(scheduled="0/2 nodes are available: 2 cannot allocate all claims."), [], errors.DRIVER),
        (_pod(scheduled="0/2 nodes are available: 2 Insufficient cpu."), [], errors.CLUSTER),
        (_pod(scheduled="0/1 nodes are available: 1 node(s) had untolerated taint {x: y}."), [], errors.CLUSTER),
        (_pod(), [], errors.CLUSTER),  # no scheduler acted on it
        (_pod(scheduled="0/1 nodes are available: 1 Insufficient devices.kubevirt.io/kvm."), [], errors.CLUSTER),
        (_pod(scheduled="class gpu: selector #0: CEL runtime error: no such key: index"), [], errors.DRIVER),
        (_pod(node="n1"), ["Warning FailedCreatePodSandBox Pod/p: failed to setup network"], errors.CLUSTER),
        (_pod(), ["Normal BindingConditionsPending Pod/p: waiting for binding conditions of device d"], errors.DRIVER),
        (
            _pod(),
            ["Warning FailedScheduling Pod/p: 0/2 nodes are available: 2 cannot allocate all claims."],
            errors.DRIVER,
        ),
        (_pod(), ["Warning FailedScheduling Pod/p: 0/2 nodes are available: 2 Insufficient cpu."], errors.CLUSTER),
        (_pod(node="n1", waiting="ImagePullBackOff"), [], errors.CLUSTER),
        (_pod(node="n1", waiting="ContainerCreating"), ["Normal Pulling Pod/p: Pulling image x"], errors.CLUSTER),
        (_pod(node="n1"), ["Normal Pulling Pod/p: Pulling image x", "Normal Pulled Pod/p: ok"], errors.DRIVER),
    ],
)
def test_a_pod_that_did_not_get_running_is_blamed_on_who_had_to_act(pod, events, party):
    """s16 breaker F1: a pod timeout is the driver's only where the driver had a part in it."""
    from conformance.k8s.waits.pods import timeout_party

    assert timeout_party(pod, events) == party


def test_a_wait_marks_its_timeouts_with_its_party_and_keeps_a_nested_one():
    from conformance.k8s.waits.core import blames

    @blames(errors.CLUSTER)
    def outer(inner_party: str):
        raise errors.WaitTimeout("x", 1, party=inner_party)

    for inner, expected in (("", errors.CLUSTER), (errors.DRIVER, errors.DRIVER)):
        with pytest.raises(errors.WaitTimeout) as raised:
            outer(inner)
        assert raised.value.party == expected


def test_the_waits_stay_timed_under_their_party():
    """The wait clock (summary.md's "waiting on the cluster") counts until(); blames must not take its place."""
    from conformance.k8s.waits import core

    assert getattr(core.until, "__wrapped__", None) is not None  # clock.timed wraps until
    assert core.blames(errors.DRIVER).__name__ == "wrap"


@pytest.mark.parametrize(
    "finalizers, party",
    [(["resource.kubernetes.io/delete-protection"], errors.CLUSTER), (["gpu.example.com/busy"], errors.DRIVER)],
)
def test_a_claim_held_by_a_finalizer_of_its_driver_is_the_drivers(monkeypatch, finalizers, party):
    """s16 breaker 3 #4: the claim never goes because a finalizer the driver put there stays."""
    from conformance.core.objects import Obj
    from conformance.k8s.waits import claims

    def never(*_a, **_kw):
        raise errors.WaitTimeout("ResourceClaim ns/c deleted", 30)

    class K8s:
        def get(self, *_a):
            return Obj({"kind": "ResourceClaim", "metadata": {"name": "c", "finalizers": finalizers}})

    monkeypatch.setattr(claims, "object_gone", never)
    claim = Obj({"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"}})
    with pytest.raises(errors.WaitTimeout) as raised:
        claims.claim_gone(K8s(), claim, timeout=30)
    assert raised.value.party == party and finalizers[0] in str(raised.value)
