"""Small Kubernetes helpers for our own e2e tests of the local cluster (kubernetes Python client).
Every wait is bounded and reports the last observed state."""

from __future__ import annotations

import time
import uuid

from kubernetes import client, config
from kubernetes.client.rest import ApiException


def core_api(handle) -> client.CoreV1Api:
    """CoreV1Api authenticated with the cluster's admin kubeconfig."""
    return client.CoreV1Api(config.new_client_from_config(config_file=str(handle.kubeconfig)))


def namespace(api: client.CoreV1Api, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    api.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={"dra-conformance.test/e2e": "1"}))
    )
    return name


def wait_default_sa(api: client.CoreV1Api, ns: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            api.read_namespaced_service_account("default", ns)
            return
        except ApiException:
            time.sleep(0.2)
    raise AssertionError(f"ServiceAccount {ns}/default not created within {timeout}s")


def busybox_pod(name: str, node: str, image: str, script: str, host_network: bool = False) -> client.V1Pod:
    """A pod pinned to ``node`` running ``sh -c script`` once, never pulling (``host_network``: in the node's
    network and UTS namespaces, PodSpec.hostNetwork)."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_name=node,
            host_network=host_network or None,
            restart_policy="Never",
            termination_grace_period_seconds=1,
            containers=[
                client.V1Container(name="c", image=image, image_pull_policy="Never", command=["sh", "-c", script])
            ],
        ),
    )


def wait_pod_done(api: client.CoreV1Api, ns: str, name: str, timeout: float = 90.0) -> client.V1Pod:
    """Wait until the pod Succeeded; raises AssertionError with its status if it Failed or timed out."""
    deadline = time.monotonic() + timeout
    pod = None
    while time.monotonic() < deadline:
        pod = api.read_namespaced_pod(name, ns)
        if pod.status.phase == "Succeeded":
            return pod
        if pod.status.phase == "Failed":
            break
        time.sleep(0.5)
    events = api.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
    raise AssertionError(
        f"pod {ns}/{name} did not succeed (phase {pod.status.phase if pod else '?'}):\n"
        f"{pod.status if pod else ''}\nevents: {[(e.reason, e.message) for e in events]}"
    )


def delete_namespace(api: client.CoreV1Api, ns: str, timeout: float = 90.0) -> None:
    """Delete ``ns`` and wait until it is gone."""
    try:
        api.delete_namespace(ns, grace_period_seconds=0)
    except ApiException as exc:
        if exc.status != 404:
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = api.read_namespace(ns).status
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        time.sleep(0.5)
    raise AssertionError(f"namespace {ns} not deleted within {timeout}s: {state}")


def run_on_each_node(
    api, handle, ns: str, script: str, prefix: str = "p", host_network: bool = False
) -> dict[str, str]:
    """Run ``script`` in a busybox pod on every real node (``host_network``: see :func:`busybox_pod`); returns
    node name -> pod log."""
    names = {}
    for i, node in enumerate(handle.nodes):
        name = f"{prefix}-{i}"
        api.create_namespaced_pod(ns, busybox_pod(name, node.name, handle.images["busybox"], script, host_network))
        names[node.name] = name
    logs = {}
    for node, name in names.items():
        pod = wait_pod_done(api, ns, name)
        assert pod.spec.node_name == node
        logs[node] = api.read_namespaced_pod_log(name, ns)
    return logs
