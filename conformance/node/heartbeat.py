"""A heartbeat from the run to the anchor Job of its privileged helper pods (helper_pod.py): the helper pods end
minutes after the run stops, also when it is killed with SIGKILL, not only at their hard deadline.

How: the run's process renews the annotation :data:`ANNOTATION` on the anchor Job's pod every ``interval`` seconds
(:class:`Heartbeat`, a daemon thread; one merge PATCH of the pod each time). The anchor pod sees its own
annotations in a ``downwardAPI`` volume (:func:`anchor_volume`; the kubelet rewrites the file when the pod's
annotations change) and its container (:func:`anchor_command`, busybox ``sh``) exits 1 when the value has not changed
for ``stale`` seconds, measured with the node's own clock (no clock skew between the run's host and the node). The
Job has ``backoffLimit: 0``, so it fails at once; the TTL-after-finished controller deletes it and the garbage
collector the helper pods it owns. This anchor needs no API access (no ServiceAccount token is mounted); it
leaves the empty helper namespace to ``dra-conformance cleanup``.

With an image holding Python (the helpers' gRPC relay image) the anchor is a reaper (:func:`reaper_command`): on
a stale heartbeat it deletes the helper namespace itself (``DELETE /api/v1/namespaces/<ns>`` with its own
ServiceAccount token, the API server's certificate verified against the pod's CA), so nothing of the run is left
with no process of the run alive. Its only permission is that one delete: a Role and RoleBinding
(:func:`reaper_rbac`) inside the helper namespace (a namespaced Role with ``resourceNames: [<ns>]`` on
``namespaces`` authorizes deleting that Namespace object, kubernetes/kubernetes#134929), which go with the
namespace: the run needs no cluster-wide ``create clusterroles``. No owner reference, no finalizer anywhere.

Failures are not silent: :meth:`Heartbeat.start` raises when the first beat cannot be written, and every
node-access call names the error once beats have failed for half of ``stale`` (:meth:`Heartbeat.check`).

Costs: one PATCH per ``interval`` (default 30 s). Needs ``patch pods`` in the helper namespace
(conformance/core/permissions.py). When the anchor pod cannot run (no schedulable node for an unprivileged pod
without tolerations), nothing checks the heartbeat and the helper pods end at their ``activeDeadlineSeconds``
(:meth:`Heartbeat.anchor_problem` says so). Sources: Kubernetes downward API volume (``fieldRef:
metadata.annotations``, updated in place), batch/v1 Job ``backoffLimit``, ``ttlSecondsAfterFinished`` (KEP-592),
the Job controller's pod label ``batch.kubernetes.io/controller-uid`` (Kubernetes >= 1.27); RBAC ``resourceNames``
(a Role's rule on ``namespaces`` applies to the Namespace it is in: kubernetes/kubernetes#134929, #142024).
"""

from __future__ import annotations

import threading
import time

from conformance.core.errors import ConformanceError
from conformance.k8s import waits
from conformance.node.base import NodeAccessUnavailable

ANNOTATION = "dra-conformance.io/heartbeat"
VOLUME = "heartbeat"
MOUNT = "/heartbeat"  # the anchor container's view of its own annotations: MOUNT/annotations
INTERVAL = 30.0  # seconds between renewals
STALE = 300  # seconds without a renewal after which the anchor ends (times --timeout-scale)
POLL = 5  # seconds between the anchor's reads of its annotations
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
FIRST_BEAT = 15  # seconds the first beat may wait for the Job controller to create the anchor pod
NO_POD = "no pod of the anchor Job"  # the error of a beat that found none (yet)


def anchor_volume() -> tuple[dict, dict]:
    """``(volume, volumeMount)`` of the anchor pod: its ``metadata.annotations`` as the file ``MOUNT/annotations``
    (one ``key="value"`` line per annotation)."""
    item = {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}}
    return {"name": VOLUME, "downwardAPI": {"items": [item]}}, {"name": VOLUME, "mountPath": MOUNT, "readOnly": True}


def anchor_command(stale: int, poll: int = POLL, mount: str = MOUNT, log: str = "/dev/termination-log") -> list[str]:
    """The anchor container's command (busybox ``sh``): read the :data:`ANNOTATION` line of ``mount/annotations``
    every ``poll`` seconds; exit 1 with a message (also written to ``log``, the pod's termination message) when it
    has not changed for ``stale`` seconds."""
    script = (
        f"f={mount}/annotations; last=; seen=$(date +%s); "
        "while :; do "
        f"v=$(grep '^{ANNOTATION}=' $f 2>/dev/null); now=$(date +%s); "
        'if [ "$v" != "$last" ]; then last=$v; seen=$now; fi; '
        f"if [ $((now - seen)) -ge {int(stale)} ]; then "
        f'echo "no heartbeat from the run for {int(stale)} s (last: $last): the anchor ends, the Job fails and '
        f'the helper pods it owns are deleted" | tee {log}; exit 1; fi; '
        f"sleep {int(poll)}; done"
    )
    return ["sh", "-c", script]


REAPER = """
import os, ssl, sys, time, urllib.request
f, stale, poll, ns, key, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
extra = sys.argv[7:]  # the API server's own addresses (host:port), after the kubernetes Service
last, seen = None, time.monotonic()
while time.monotonic() - seen < stale:
    try:
        value = [line for line in open(f) if line.startswith(key + "=")]
    except OSError:
        value = None
    if value != last:
        last, seen = value, time.monotonic()
    time.sleep(poll)
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
servers = ([f"[{host}]:{port}" if ":" in host else f"{host}:{port}"] if host else []) + extra
said, errors, done = f"no heartbeat from the run for {stale} s: ", {}, ""
for attempt in range(12):
    for server in servers:
        try:
            token = open(sa + "/token").read().strip()
            url, auth = f"https://{server}/api/v1/namespaces/{ns}", {"Authorization": "Bearer " + token}
            request = urllib.request.Request(url, method="DELETE", headers=auth)
            urllib.request.urlopen(request, context=ssl.create_default_context(cafile=sa + "/ca.crt"), timeout=10)
            done = server
            break
        except Exception as exc:
            errors[server] = str(exc)[:200]
    if done:
        break
    time.sleep(5)
if done:
    said += f"namespace {ns} deleted by its anchor (through {done})"
else:
    said += f"deleting namespace {ns} failed ({errors}); the Job fails and the helper pods it owns are deleted"
print(said, flush=True)
open(log, "w").write(said)
sys.exit(1)
"""


def reaper_command(
    stale: int, namespace: str, poll: int = POLL, mount: str = MOUNT, endpoints: tuple[str, ...] = ()
) -> list[str]:
    """The reaper anchor's command (``python``, standard library only): :func:`anchor_command`'s heartbeat check,
    then ``DELETE`` of ``namespace`` with the pod's ServiceAccount token, the server's certificate verified against
    the pod's CA, through the ``kubernetes`` Service and then each of ``endpoints`` (``host:port``, the API
    server's own addresses: :func:`api_endpoints`) until one answers (12 rounds 5 s apart); then exit 1. The
    termination message says what it did."""
    args = [f"{mount}/annotations", str(int(stale)), str(int(poll)), namespace, ANNOTATION, "/dev/termination-log"]
    return ["python", "-c", REAPER, *args, *endpoints]


def api_endpoints(k8s) -> tuple[str, ...]:
    """``host:port`` of each API server behind the ``kubernetes`` Service (EndpointSlices of ``default`` labelled
    ``kubernetes.io/service-name=kubernetes``): where the reaper goes when the Service's ClusterIP does not reach
    this cluster's API server (on a host shared by several local clusters, another's kube-proxy may hold it).
    Empty when they cannot be read (the reaper then uses the Service alone). Never raises."""
    try:
        slices = k8s.list("EndpointSlice", "default", label_selector="kubernetes.io/service-name=kubernetes")
    except Exception:  # noqa: BLE001 - optional: e.g. RBAC without list endpointslices
        return ()
    found = []
    for item in slices:
        ports = [p.get("port") for p in item.get("ports") or [] if p.get("name") == "https"]
        for endpoint in item.get("endpoints") or []:
            for address in endpoint.get("addresses") or []:
                host = f"[{address}]" if ":" in address else address
                found += [f"{host}:{port}" for port in ports]
    return tuple(found)


def reaper_rbac(namespace: str, labels: dict, account: str) -> list[dict]:
    """The reaper's permission: a Role in ``namespace`` allowing ``delete`` of the Namespace ``namespace`` only
    (``resourceNames``), and a RoleBinding granting it to ServiceAccount ``account`` there; both named
    ``dra-conformance-reaper``. They live in the namespace, so they are deleted with it (no owner reference).
    Measured on v1.34.4: that account may delete its namespace (200) and nothing else (403)."""
    meta = {"name": "dra-conformance-reaper", "namespace": namespace, "labels": labels}
    rbac = "rbac.authorization.k8s.io"
    rule = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete"], "resourceNames": [namespace]}
    return [
        {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": meta, "rules": [rule]},
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": meta["name"]},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]


def create_reaper(k8s, namespace: str, labels: dict, account: str) -> str:
    """Create ServiceAccount ``account`` in ``namespace`` and :func:`reaper_rbac`'s objects through ``k8s``; return
    why the reaper cannot run (``""`` when all were created): the API server's refusal, e.g. RBAC without
    ``create roles`` in that namespace. What was created before a refusal is in the namespace and goes with it."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}}
    sa["metadata"]["labels"] = labels
    try:
        for obj in [sa, *reaper_rbac(namespace, labels, account)]:
            k8s.create(obj)
    except ConformanceError as exc:
        return f"the reaper's role could not be created ({str(exc).splitlines()[0]})"
    return ""


class HeartbeatFailed(ConformanceError):
    """The first heartbeat could not be written: without one the anchor ends the helper pods after ``stale`` s."""


class Heartbeat:
    """Renews :data:`ANNOTATION` on the pod of the Job with UID ``job_uid`` in ``namespace`` every ``interval``
    seconds from a daemon thread (:meth:`start` .. :meth:`stop`). ``error``: the last renewal's failure ("" after a
    success); ``failing_since``: ``time.monotonic()`` of the first refused renewal since the last success (None
    while they succeed, or find no anchor pod). A failure is retried at the next beat: the anchor tolerates
    ``stale`` seconds of them, after half of that :meth:`check` says so at every node-access call (breaker F7: a
    PATCH refused by a policy engine or a changed Role would otherwise let the anchor delete the helper namespace
    mid-run, unexplained)."""

    def __init__(self, k8s, namespace: str, job_uid: str, interval: float = INTERVAL, stale: float = STALE) -> None:
        self.k8s, self.namespace, self.job_uid, self.interval = k8s, namespace, job_uid, float(interval)
        self.stale = float(stale)
        self.beats, self.error, self.failing_since = 0, "", None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _pods(self) -> list:
        return self.k8s.list("Pod", self.namespace, label_selector=f"{JOB_UID_LABEL}={self.job_uid}")

    def beat(self) -> None:
        """One renewal: a merge PATCH of every pod of the anchor Job (one, unless it was replaced) with a new
        value (``<count> <unix time>``). Records a failure in ``error`` instead of raising."""
        try:
            pods = self._pods()
            if not pods:  # not a refusal, and with no anchor pod nothing counts down: not in failing_since
                self.error = f"{NO_POD} (uid {self.job_uid}) in {self.namespace} yet"
                return
            value = f"{self.beats + 1} {time.time():.0f}"
            for pod in pods:
                self.k8s.patch("Pod", pod.name, {"metadata": {"annotations": {ANNOTATION: value}}}, self.namespace)
            self.beats, self.error, self.failing_since = self.beats + 1, "", None
        except Exception as exc:  # noqa: BLE001 - API or connection error: retried at the next beat, never fatal
            self._failed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    def _failed(self, error: str) -> None:
        self.error = error
        if self.failing_since is None:
            self.failing_since = time.monotonic()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def start(self, first_within: float = FIRST_BEAT) -> None:
        """The first beat now, then one every ``interval`` seconds from a daemon thread. The first is retried
        every second while the Job controller has not created the anchor pod yet (at most ``first_within``
        seconds, times ``--timeout-scale``; still none: renewals go on, :meth:`anchor_problem` says why nothing
        ends the helper pods before their deadline). Raises HeartbeatFailed naming the API server's answer when
        the beat is refused (e.g. ``patch pods``): without heartbeats the helper pods end after ``stale`` s."""
        waits.poll(self._first_beat_done, timeout=first_within, interval=1.0)
        if not self.beats and not self.error.startswith(NO_POD):
            raise HeartbeatFailed(
                f"the first heartbeat to the anchor Job's pod in {self.namespace} failed: {self.error}; without "
                f"heartbeats the anchor ends the helper pods after {self.stale:.0f} s. Fix: allow `list` and `patch` "
                f"of pods in {self.namespace} (RBAC, admission webhooks, policy engines)"
            )
        self._thread = threading.Thread(target=self._loop, name="helper-pods-heartbeat", daemon=True)
        self._thread.start()

    def _first_beat_done(self) -> bool:
        self.beat()
        return bool(self.beats) or not self.error.startswith(NO_POD)

    def check(self) -> None:
        """Raise NodeAccessUnavailable naming the heartbeat's error once it has failed for longer than half of
        ``stale`` seconds (the helper pods, and with the reaper their namespace, go when it reaches ``stale``);
        nothing while beats succeed or fail for less. Called at each node-access call (helper_pod.py)."""
        since = self.failing_since
        if since is None or time.monotonic() - since <= self.stale / 2:
            return
        raise NodeAccessUnavailable(
            f"the heartbeat to the anchor Job's pod in {self.namespace} has failed for "
            f"{time.monotonic() - since:.0f} s (last error: {self.error}); after {self.stale:.0f} s without one the "
            f"anchor ends the privileged helper pods (a reaper deletes {self.namespace}). Fix: allow `list` and "
            f"`patch` of pods in {self.namespace} for the run (RBAC, admission webhooks, policy engines)"
        )

    def stop(self) -> None:
        """Stop renewing (waits at most one request for the thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=getattr(self.k8s, "request_timeout", 30.0))

    def anchor_problem(self) -> str:
        """Why the heartbeat cannot end the helper pods ("" when the anchor pod runs or is being started on a
        node): no anchor pod, one the scheduler could not place (``PodScheduled`` False, e.g. ``Unschedulable: 0/3
        nodes are available: ... untolerated taint``), one that ended, or the pods cannot be read."""
        try:
            pods = self._pods()
        except Exception as exc:  # noqa: BLE001 - reported, not raised: the run goes on with the hard bound
            return f"the anchor pod cannot be read: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        if not pods:
            return "the anchor Job has no pod"
        pod = pods[0]
        phase = pod.get("status.phase")
        if phase == "Running" or (phase == "Pending" and pod.get("spec.nodeName")):
            return ""
        unscheduled = [
            f"{c.get('reason', '')}: {c.get('message', '')}"
            for c in pod.get("status.conditions") or []
            if c.get("type") == "PodScheduled" and c.get("status") == "False"
        ]
        if phase == "Pending" and not unscheduled:
            return ""  # not decided yet: the scheduler has not answered
        return f"the anchor pod {pod.name} is {phase}" + (f" ({'; '.join(unscheduled)})" if unscheduled else "")
