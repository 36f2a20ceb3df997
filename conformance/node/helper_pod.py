"""NodeAccess for clusters the harness did not create: one privileged helper pod per node (explicit opt-in,
``--node-access privileged-pod``), with the host's root mounted at /host and the host PID namespace.

Container ``helper`` (a busybox image) reads CDI specs (/var/run/cdi, /etc/cdi), the kubelet plugin registry and
container log files through ``exec``, and restarts the kubelet with ``nsenter -t 1 ... systemctl restart
kubelet``. Container ``grpc`` (an image with Python and grpcio: the offline ``reference-driver`` image) relays
unary gRPC calls to the node's sockets (registration GetInfo, PodResources, the driver's DRAPlugin service;
exec_grpc.py); without a ``grpc_image`` those calls raise NodeAccessUnavailable naming the missing image. The
helper namespace carries the run label, so the session sweep removes it.

Bounded lifetime, also when the run is killed with SIGKILL (no finalizer, nothing of the run's process needed;
issue 27 §4): every helper pod is owned (``metadata.ownerReferences``) by the run's anchor, a batch/v1 Job
(:func:`run_anchor`, built with the pods and namespace in helper_specs.py; ``backoffLimit: 0``,
``ttlSecondsAfterFinished: 0``), whose pod ends when the run's heartbeat stops (heartbeat.py: the run renews an
annotation on it every 30 s; without a renewal for 5 min times ``--timeout-scale`` it exits 1; heartbeat failures
are named at node-access calls). The Job then fails, the
TTL-after-finished controller and the garbage collector delete it and its pods. A hard bound: the pods and Job carry
``activeDeadlineSeconds`` (:data:`HELPER_POD_DEADLINE`, 8 h times ``--timeout-scale``: the kubelet and the Job
controller end them even when the anchor pod never ran). With a gRPC relay image (Python) the anchor is a
reaper: it deletes the helper namespace on a stale heartbeat (a Role there allows only that: heartbeat.py); else
the empty namespace stays until ``dra-conformance cleanup``. :attr:`HelperPodNodeAccess.lifetime` says all this.
"""

from __future__ import annotations

import datetime
import shlex
from collections.abc import Sequence

import grpc
from kubernetes import client as kclient
from kubernetes.stream import stream

from conformance import images as refs
from conformance.core import errors, names, timeouts
from conformance.k8s import waits
from conformance.k8s.client import K8s
from conformance.k8s.waits.pods import PULL_FAILURES
from conformance.node import cdi, cdi_identity, crilog, draplugin, heartbeat, registration
from conformance.node.base import NodeAccessUnavailable
from conformance.node.exec_grpc import ExecChannel
from conformance.node.helper_specs import (  # noqa: F401 - the builders, re-exported for callers
    ANCHOR,
    GRPC_CONTAINER,
    GRPC_IDLE,
    HELPER_POD_DEADLINE,
    HELPER_PREFIX,
    PRIVILEGED_NS_LABELS,
    helper_namespace,
    helper_pod,
    run_anchor,
)
from conformance.node.podresources import PodResourcesClient

KUBELET_ROOT = "/var/lib/kubelet"
CDI_DIRS = ("/var/run/cdi", "/etc/cdi")
STAT_DONE = "dra-conformance-stat-done"  # the last line of a device_numbers answer: the probe ran
HOST_NS = "nsenter -t 1 -m -u -i -n -p --"  # run in the host's namespaces (hostPID: pid 1 is the host's init)
PODRESOURCES_SOCKET = KUBELET_ROOT + "/pod-resources/kubelet.sock"  # kubelet default (KEP-606)


def pull_failures(k8s: K8s, namespace: str) -> list[str]:
    """``"node N: container C could not pull IMAGE: REASON: MESSAGE"`` for each container of the pods in
    ``namespace`` that waits in an image pull failure (Pod ``status.containerStatuses[].state.waiting.reason``:
    ErrImagePull, ImagePullBackOff, ...); [] when none or the pods cannot be listed."""
    try:
        pods = k8s.list("Pod", namespace)
    except errors.ConformanceError:
        return []
    out = []
    for pod in pods:
        for status in pod.get("status.containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in PULL_FAILURES:
                out.append(
                    f"node {pod.get('spec.nodeName')}: container {status.get('name')} could not pull "
                    f"{status.get('image')}: {waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
                )
    return out


class HelperPodNodeAccess:
    """Node access through privileged helper pods (created by :meth:`start`, removed by :meth:`stop`)."""

    mode = "privileged-pod"

    def __init__(
        self,
        k8s: K8s,
        node_names: list[str],
        run_id: str,
        image: str = "busybox:1.36",
        grpc_image: str = "",
        deadline: float | None = None,
        stale: float | None = None,
        interval: float = heartbeat.INTERVAL,
    ) -> None:
        """``deadline``: the hard bound, seconds the helper pods may live (default :data:`HELPER_POD_DEADLINE` times
        ``--timeout-scale``); ``stale``: seconds without a heartbeat after which they end (default
        :data:`heartbeat.STALE` times ``--timeout-scale``); ``interval``: seconds between heartbeats (module
        docstring)."""
        self.k8s, self.node_names, self.run_id, self.image = k8s, list(node_names), run_id, image
        self.grpc_image = grpc_image
        self.deadline = int(deadline if deadline is not None else timeouts.scaled(HELPER_POD_DEADLINE))
        self.stale = int(stale if stale is not None else timeouts.scaled(heartbeat.STALE))
        self.interval = interval
        self.namespace = names.dns_label(f"dra-node-access-{run_id}")
        self.pods: dict[str, str] = {}
        self.heartbeat: heartbeat.Heartbeat | None = None
        self.lifetime = ""  # after start(): when the helper pods end (printed at start-up)
        self.reaper = ""  # after start(): why the anchor cannot delete the namespace ("" when it can)
        self._error = ""

    def start(self) -> None:
        """Create the namespace, the anchor Job, start the heartbeat (a refused first beat: :attr:`failure` names
        it), create one helper pod per node the Job owns and wait until they run (bounded); then :attr:`lifetime`."""
        try:
            self.k8s.create(helper_namespace(self.namespace, self.run_id))
            waits.default_service_account(self.k8s, self.namespace, timeout=timeouts.API_SHORT)
            self.reaper = self._reaper_rbac()
            reaper_image = "" if self.reaper else self.grpc_image
            found = heartbeat.api_endpoints(self.k8s) if reaper_image else ()
            spec = run_anchor(self.namespace, self.run_id, self.image, self.deadline, self.stale, reaper_image, found)
            anchor = self.k8s.create(spec)
            ends = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.deadline)
            self.heartbeat = heartbeat.Heartbeat(self.k8s, self.namespace, anchor.uid, self.interval, self.stale)
            self.heartbeat.start()  # before the helper pods (slow pulls); HeartbeatFailed: no node access, named
            for i, node in enumerate(self.node_names):
                spec = helper_pod(
                    f"{HELPER_PREFIX}{i}",
                    self.namespace,
                    node,
                    self.image,
                    self.run_id,
                    self.grpc_image,
                    self.deadline,
                    owner=(anchor.name, anchor.uid),
                )
                pod = self.k8s.create(spec)
                waits.pod_running(self.k8s, pod, timeout=timeouts.POD_START)
                self.pods[node] = pod.name
        except errors.ConformanceError as exc:
            pulls = pull_failures(self.k8s, self.namespace) if isinstance(exc, errors.WaitError) else []
            self._error = "; ".join([str(exc).splitlines()[0], *pulls])
            return
        self.lifetime = self._lifetime(ends)

    def _reaper_rbac(self) -> str:
        """The reaper's account and permission; why not ("" when created): heartbeat.create_reaper."""
        if not self.grpc_image:
            return "no image with Python on every node (the gRPC relay) to run the reaper"
        labels = names.run_labels(self.run_id, "node-access")
        return heartbeat.create_reaper(self.k8s, self.namespace, labels, ANCHOR)

    def _lifetime(self, ends: datetime.datetime) -> str:
        """The start-up line: when the helper pods end if this run is killed."""
        at = f"at the latest at {ends:%Y-%m-%d %H:%M} UTC (activeDeadlineSeconds {self.deadline})"
        problem = self.heartbeat.anchor_problem() if self.heartbeat else "no heartbeat"
        if problem:
            return (
                f"privileged helper pods in {self.namespace}: {problem}, so no heartbeat can end them; if this run "
                f"is killed they stay until {at[len('at the latest at ') :]} (`dra-conformance cleanup --run-id "
                f"{self.run_id}` removes them sooner)"
            )
        gone = (
            "with their namespace (the anchor deletes it)"
            if not self.reaper
            else f"(anchor Job {ANCHOR}; {self.reaper}: the empty namespace stays until `dra-conformance cleanup`)"
        )
        loose = refs.unpinned([self.image, self.grpc_image])  # privileged code under a tag someone may move
        pins = f"; WARNING: image(s) {', '.join(loose)} not pinned by digest ({refs.PIN_FIX})" if loose else ""
        return (
            f"privileged helper pods in {self.namespace}: if this run is killed they end about {self.stale} s after "
            f"its last heartbeat {gone}, {at}{pins}"
        )

    @property
    def failure(self) -> str:
        """Why the helper pods are not usable (empty: they run on every node)."""
        return self._error or ("" if len(self.pods) == len(self.node_names) else "not started on every node")

    def attach(self) -> None:
        """Use the helper pods another process of the same run started (an xdist worker): ``node -> pod``
        from the running pods of the helper namespace; a node without one is unavailable with that reason."""
        try:
            pods = self.k8s.list("Pod", self.namespace)
        except errors.ConformanceError as exc:
            self._error = str(exc).splitlines()[0]
            return
        running = [p for p in pods if p.name.startswith(HELPER_PREFIX) and p.get("status.phase") == "Running"]
        self.pods = {p.get("spec.nodeName"): p.name for p in running}  # not the anchor Job's pod
        if len(self.pods) != len(self.node_names):
            self._error = f"helper pods running in {self.namespace}: {sorted(self.pods.values())}"

    def stop(self) -> None:
        """Stop the heartbeat, delete the helper namespace (its pods go with it) and wait until it is gone
        (bounded: raises WaitTimeout naming it; the session's run-label sweep then tries again)."""
        if self.heartbeat is not None:
            self.heartbeat.stop()
        try:
            ns = self.k8s.get("Namespace", self.namespace)
            self.k8s.delete("Namespace", self.namespace)
        except errors.NotFound:
            return
        waits.object_gone(self.k8s, ns, timeout=timeouts.NAMESPACE_DELETE)

    def _exec(self, node: str, script: str) -> str:
        return self._exec_argv(node, ["sh", "-c", script])

    def _exec_argv(self, node: str, argv: list[str], container: str = "helper") -> str:
        if node not in self.pods:
            raise NodeAccessUnavailable(f"no helper pod on node {node}: {self._error or 'not started'}")
        if self.heartbeat is not None:  # failing for half of `stale`: named here, before the pods go (F7)
            self.heartbeat.check()
        api = kclient.CoreV1Api(self.k8s.api)
        return stream(
            api.connect_get_namespaced_pod_exec,
            self.pods[node],
            self.namespace,
            command=argv,
            container=container,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )

    def _dial(self, node: str):
        """A ``unixsock.Dial`` whose channels relay through ``node``'s grpc container (socket paths are the
        node's: /host is prefixed)."""
        if not self.grpc_image:
            raise NodeAccessUnavailable(
                "the privileged helper pods have no gRPC relay: no image with Python and grpcio on every node "
                "(import the reference-driver image: `dra-conformance images export`/`import`, or push it with "
                "`dra-conformance images push --registry R` and run with --image-registry R)"
            )

        def run(argv: list[str]) -> str:
            return self._exec_argv(node, argv, GRPC_CONTAINER)

        return lambda socket, options=(): ExecChannel(run, "/host" + str(socket))

    def probe(self) -> tuple[bool, str]:
        if len(self.pods) != len(self.node_names):
            return False, f"privileged helper pods not running: {self._error or 'not started'}"
        return True, f"privileged helper pods in namespace {self.namespace} on {sorted(self.pods)}"

    def cdi_specs(self, node: str) -> dict[str, str]:
        """CDI spec files (``*.json``, ``*.yaml``) of the node's /etc/cdi and /var/run/cdi, read in one exec. The
        host's /var/run is usually a symlink to /run, which would resolve inside the container: then its
        /run/cdi is read."""
        script = "r=/host/var/run/cdi; [ -L /host/var/run ] && r=/host/run/cdi; " + cdi.dump_script(
            ["/host/etc/cdi", "$r"]
        )
        return cdi.parse_dump(self._exec(node, script))

    def device_numbers(self, node: str, paths: Sequence[str]) -> dict[str, str]:
        """StatsNodeDevices: ``{path: "c 1:3"}`` of the device nodes at ``paths`` on ``node`` (host paths; a path
        that does not exist is left out). Stat'ed under the node's root (``chroot /host``, the node's own sh and
        stat: a symlink resolves as on the node); on a node without them, by the helper container under /host
        (an absolute symlink then resolves in the container). An answer counts only when it ends with a marker
        line and names every path (numbers or ``missing``): a stat that did not run or failed is never read as
        "no such path". Raises NodeAccessUnavailable when neither answered."""
        answers = []
        for prefix in ("", "/host"):
            asked = [prefix + p for p in paths]
            script = cdi_identity.stat_script(asked) + f"; echo {STAT_DONE}"
            script = f"chroot /host sh -c {shlex.quote(script)}" if not prefix else script
            out = self._exec(node, f"{{ {script}; }} 2>&1")
            if STAT_DONE in out.splitlines() and cdi_identity.accounted(out, asked):
                return {path.removeprefix(prefix): n for path, n in cdi_identity.parse_stat(out).items()}
            answers.append(out.strip()[-300:])
        raise NodeAccessUnavailable(f"cannot stat device nodes on node {node} through the helper pod: {answers}")

    def plugin_sockets(self, node: str) -> list[str]:
        return sorted(self._exec(node, f"ls /host{KUBELET_ROOT}/plugins_registry").split())

    def plugin_info(self, node: str) -> list[dict]:
        """GetInfo answers of every ``*.sock`` in the node's plugin registry, relayed by the grpc container
        (shape of :func:`conformance.node.registration.plugins_in`)."""
        dial, out = self._dial(node), []
        for name in (n for n in self.plugin_sockets(node) if n.endswith(".sock")):
            socket = f"{KUBELET_ROOT}/plugins_registry/{name}"
            try:
                out.append({**registration.get_info(socket, dial=dial), "socket": name})
            except grpc.RpcError as exc:
                out.append({"socket": name, "error": str(exc.code())})
        return out

    def pod_resources(self, node: str) -> PodResourcesClient:
        """A client of the node's PodResources socket (:data:`PODRESOURCES_SOCKET`), relayed."""
        return PodResourcesClient(PODRESOURCES_SOCKET, dial=self._dial(node))

    def dra_plugin(self, node: str, driver: str) -> draplugin.DraPluginClient:
        """A client of ``driver``'s DRAPlugin service on ``node`` at the endpoint its GetInfo advertises
        (relayed). Raises DraPluginError when no plugin of that driver is registered there."""
        dial = self._dial(node)
        socket, version = draplugin.endpoint_of(self.plugin_info(node), driver, node)
        return draplugin.DraPluginClient(socket, version, driver=driver, node=node, dial=dial)

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str:
        directory = crilog.log_dir(namespace, pod, uid, container, root="/host" + crilog.POD_LOGS)
        return crilog.output(self._exec(node, f"cat $(ls {shlex.quote(directory)}/*.log | tail -n 1)"))

    def restart_kubelet(self, node: str) -> None:
        self._exec(node, f"{HOST_NS} systemctl restart kubelet")

    def can_restart_kubelet(self) -> tuple[bool, str]:
        """``(able, evidence)``: every node's host runs the kubelet as an active systemd unit (``systemctl
        is-active kubelet`` in the host's namespaces answers ``active``): only then is a restart a restart."""
        ok, why = self.probe()
        if not ok:
            return ok, why
        answers = {}
        for node in self.node_names:
            try:
                answers[node] = self._exec(node, f"{HOST_NS} systemctl is-active kubelet 2>&1").strip()[-200:]
            except Exception as exc:  # noqa: BLE001 - exec refused or failed: the evidence says so
                answers[node] = f"exec failed: {exc}"
        able = all(a == "active" for a in answers.values())
        return able, f"`systemctl is-active kubelet` on the nodes' hosts (helper pods, nsenter): {answers}"
