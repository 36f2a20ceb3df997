"""The Kubernetes objects of node access through privileged helper pods (helper_pod.py): the helper pod of a node,
the run's anchor Job that owns them (their bounded lifetime after SIGKILL, issue 27 §4; heartbeat.py ends it) and
the helper namespace. Pure builders: dicts in the shape of the API objects (core/v1 Pod, Namespace; batch/v1 Job),
nothing sent to a cluster here.
"""

from __future__ import annotations

from conformance.core import names
from conformance.node import heartbeat

GRPC_CONTAINER = "grpc"
GRPC_IDLE = ["python", "-c", "import signal; signal.pause()"]  # the grpc container waits for execs
HELPER_POD_DEADLINE = 8 * 3600  # hard bound, s (times --timeout-scale): a long full profile; heartbeat.py ends them
ANCHOR = "node-access-anchor"  # the Job owning the helper pods
HELPER_PREFIX = "helper-"  # helper pod i is helper-<i>; the anchor Job's pod is not one


def helper_pod(
    name: str,
    namespace: str,
    node: str,
    image: str,
    run_id: str,
    grpc_image: str = "",
    deadline: int = HELPER_POD_DEADLINE,
    owner: tuple[str, str] | None = None,
) -> dict:
    """The privileged helper pod spec for ``node`` (hostPID, host / at /host, tolerates every taint); with
    ``grpc_image`` a second container :data:`GRPC_CONTAINER` that relays gRPC calls (helper_pod.py's module docstring).
    ``deadline``: ``spec.activeDeadlineSeconds``; ``owner``: ``(name, uid)`` of the anchor Job
    (:func:`run_anchor`), named in ``metadata.ownerReferences``."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": names.run_labels(run_id, "node-access")},
        "spec": {
            "activeDeadlineSeconds": int(deadline),
            "nodeName": node,
            "hostPID": True,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "helper",
                    "image": image,
                    "command": ["sleep", "86400"],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }
    if grpc_image:
        relay = {**pod["spec"]["containers"][0], "name": GRPC_CONTAINER, "image": grpc_image, "command": GRPC_IDLE}
        pod["spec"]["containers"].append(relay)
    if owner:
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": owner[0], "uid": owner[1]}
        ]
    return pod


def run_anchor(
    namespace: str,
    run_id: str,
    image: str,
    deadline: int = HELPER_POD_DEADLINE,
    stale: int = heartbeat.STALE,
    reaper_image: str = "",
    endpoints: tuple[str, ...] = (),
) -> dict:
    """The batch/v1 Job :data:`ANCHOR` owning the helper pods: one unprivileged busybox pod that exits 1 when the
    run's heartbeat (its own annotation :data:`heartbeat.ANNOTATION`, read through a downwardAPI volume) has not
    changed for ``stale`` seconds (:func:`heartbeat.anchor_command`). ``backoffLimit: 0``: the Job fails at once;
    ``activeDeadlineSeconds: deadline``: the hard bound (reason DeadlineExceeded); ``ttlSecondsAfterFinished: 0``:
    the TTL-after-finished controller then deletes it (KEP-592) and the garbage collector its dependents. No
    tolerations (it runs on no node in particular, not on tainted control-plane nodes) and no ServiceAccount
    token. With ``reaper_image`` (Python): :func:`heartbeat.reaper_command` (``endpoints``) as ServiceAccount
    :data:`ANCHOR`, deleting ``namespace`` when the heartbeat stops. Sources: batch/v1 JobSpec; downward API."""
    labels = names.run_labels(run_id, "node-access")
    volume, mount = heartbeat.anchor_volume()
    reaper = heartbeat.reaper_command(stale, namespace, endpoints=endpoints)
    command = reaper if reaper_image else heartbeat.anchor_command(stale)
    container = {"name": "anchor", "image": reaper_image or image, "command": command, "volumeMounts": [mount]}
    pod = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "automountServiceAccountToken": bool(reaper_image),
        "volumes": [volume],
    }
    if reaper_image:
        pod["serviceAccountName"] = ANCHOR
    meta = {"labels": labels, "annotations": {heartbeat.ANNOTATION: "0"}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": ANCHOR, "namespace": namespace, "labels": labels},
        "spec": {
            "activeDeadlineSeconds": int(deadline),
            "ttlSecondsAfterFinished": 0,
            "backoffLimit": 0,
            "template": {"metadata": meta, "spec": {**pod, "containers": [container]}},
        },
    }


PRIVILEGED_NS_LABELS = {  # Pod Security Standards labels (pod-security.kubernetes.io, KEP-2579)
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}


def helper_namespace(name: str, run_id: str) -> dict:
    """The helper pods' Namespace ``name``: run-labelled (the sweep removes it) and labelled for Pod Security
    admission :data:`PRIVILEGED_NS_LABELS` (the helper pods are privileged by design: hostPID, host /)."""
    labels = {**names.run_labels(run_id, "node-access"), **PRIVILEGED_NS_LABELS}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
