"""The heartbeat that ends the privileged helper pods minutes after a run stops (breaker finding 6;
conformance/node/heartbeat.py): the anchor container's script (run here with the host's ``sh``), the renewal
thread and the start-up line of HelperPodNodeAccess, against fake API objects."""

import subprocess
import threading
import time
from types import SimpleNamespace

from conformance.core.objects import Obj
from conformance.node import heartbeat
from conformance.node import helper_pod as hp


def _anchor(tmp_path, stale: int) -> subprocess.Popen:
    """The anchor's script with ``stale`` seconds, polling every second, reading tmp_path/annotations."""
    argv = heartbeat.anchor_command(stale, poll=1, mount=str(tmp_path), log=str(tmp_path / "termination-log"))
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def _write(tmp_path, value: str) -> None:
    """What the kubelet writes into the downwardAPI volume: one ``key="value"`` line per annotation."""
    (tmp_path / "annotations").write_text(f'other="x"\n{heartbeat.ANNOTATION}="{value}"\n')


def test_the_anchor_exits_1_when_the_heartbeat_does_not_change_for_stale_seconds(tmp_path):
    _write(tmp_path, "0")
    started = time.monotonic()
    proc = _anchor(tmp_path, stale=2)
    out, _ = proc.communicate(timeout=20)
    took = time.monotonic() - started
    assert proc.returncode == 1, out
    assert 1 <= took < 10, took  # `date +%s` counts whole seconds: 2 s stale can end after 1.01 s
    assert "no heartbeat from the run for 2 s" in out and 'last: dra-conformance.io/heartbeat="0"' in out, out
    assert "no heartbeat from the run" in (tmp_path / "termination-log").read_text()


def test_the_anchor_keeps_running_while_the_heartbeat_changes_and_ends_after_it_stops(tmp_path):
    """Renewed every 0.5 s for 5 s (more than twice ``stale``): still running; then no renewal: it exits 1."""
    _write(tmp_path, "0")
    proc = _anchor(tmp_path, stale=2)
    try:
        for n in range(10):
            time.sleep(0.5)
            _write(tmp_path, str(n + 1))
        assert proc.poll() is None, proc.stdout.read()
        stopped = time.monotonic()
        out, _ = proc.communicate(timeout=20)
        assert proc.returncode == 1 and 'last: dra-conformance.io/heartbeat="10"' in out, out
        assert time.monotonic() - stopped < 10
    finally:
        if proc.poll() is None:
            proc.kill()


class FakeK8s:
    """Pods listed by label selector; patches recorded; ``fail``: the exception the next calls raise."""

    request_timeout = 1.0

    def __init__(self, pods: list[Obj]) -> None:
        self.pods, self.patches, self.selectors, self.fail = pods, [], [], None

    def list(self, kind, namespace, label_selector=""):
        self.selectors.append((kind, namespace, label_selector))
        if self.fail:
            raise self.fail
        return self.pods

    def patch(self, kind, name, body, namespace):
        self.patches.append((kind, name, namespace, body["metadata"]["annotations"][heartbeat.ANNOTATION]))


def _pod(name: str, phase: str = "Running", node: str = "n0", conditions=()) -> Obj:
    status = {"phase": phase, "conditions": list(conditions)}
    return Obj({"kind": "Pod", "metadata": {"name": name}, "spec": {"nodeName": node}, "status": status})


def test_each_beat_patches_the_anchor_jobs_pod_with_a_new_value_and_a_failure_is_kept_not_raised():
    k8s = FakeK8s([_pod("node-access-anchor-x")])
    beat = heartbeat.Heartbeat(k8s, "ns", "job-uid", interval=0.01)
    beat.beat()
    beat.beat()
    assert k8s.selectors[0] == ("Pod", "ns", f"{heartbeat.JOB_UID_LABEL}=job-uid")
    assert [p[:3] for p in k8s.patches] == [("Pod", "node-access-anchor-x", "ns")] * 2
    assert k8s.patches[0][3] != k8s.patches[1][3] and beat.beats == 2 and beat.error == ""
    k8s.fail = ConnectionResetError("reset by peer")
    beat.beat()
    assert beat.error == "reset by peer" and beat.beats == 2
    k8s.fail, k8s.pods = None, []
    beat.beat()
    assert beat.error.startswith("no pod of the anchor Job (uid job-uid) in ns")


def test_the_thread_beats_until_stopped():
    k8s = FakeK8s([_pod("a")])
    beat = heartbeat.Heartbeat(k8s, "ns", "u", interval=0.02)
    beat.start()
    deadline = time.monotonic() + 10
    while beat.beats < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    beat.stop()
    assert beat.beats >= 3 and not any(t.name == "helper-pods-heartbeat" for t in threading.enumerate())
    stopped = beat.beats
    time.sleep(0.1)
    assert beat.beats == stopped


def test_the_anchor_problem_is_empty_when_it_runs_or_is_starting_and_names_an_unschedulable_pod():
    assert heartbeat.Heartbeat(FakeK8s([_pod("a")]), "ns", "u").anchor_problem() == ""
    assert heartbeat.Heartbeat(FakeK8s([_pod("a", "Pending")]), "ns", "u").anchor_problem() == ""  # on a node
    undecided = _pod("a", "Pending", node="")
    assert heartbeat.Heartbeat(FakeK8s([undecided]), "ns", "u").anchor_problem() == ""
    why = "0/2 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": why}
    unschedulable = _pod("a", "Pending", node="", conditions=[cond])
    said = heartbeat.Heartbeat(FakeK8s([unschedulable]), "ns", "u").anchor_problem()
    assert said == f"the anchor pod a is Pending (Unschedulable: {why})", said
    assert heartbeat.Heartbeat(FakeK8s([]), "ns", "u").anchor_problem() == "the anchor Job has no pod"


class StartK8s(FakeK8s):
    """Enough of K8s for HelperPodNodeAccess.start: creates return the object with a uid."""

    def create(self, obj):
        return SimpleNamespace(name=obj["metadata"]["name"], uid=f"uid-{obj['kind']}", kind=obj["kind"])


def _started(monkeypatch, anchor: Obj) -> hp.HelperPodNodeAccess:
    monkeypatch.setattr(hp.waits, "default_service_account", lambda *a, **k: None)
    monkeypatch.setattr(hp.waits, "pod_running", lambda *a, **k: None)
    access = hp.HelperPodNodeAccess(StartK8s([anchor]), ["n0"], "r1", deadline=3600, stale=120, interval=60)
    access.start()
    access.heartbeat.stop()
    return access


def test_start_beats_for_the_anchor_job_and_says_when_the_helper_pods_end(monkeypatch):
    access = _started(monkeypatch, _pod("node-access-anchor-x"))
    assert access.failure == "" and access.heartbeat.job_uid == "uid-Job" and access.heartbeat.beats >= 1
    said = access.lifetime
    assert said.startswith(f"privileged helper pods in {access.namespace}: if this run is killed they end about 120 s")
    assert "at the latest at " in said and "UTC (activeDeadlineSeconds 3600)" in said, said


def test_start_says_plainly_when_no_heartbeat_can_end_them(monkeypatch):
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
    access = _started(monkeypatch, _pod("node-access-anchor-x", "Pending", node="", conditions=[cond]))
    said = access.lifetime
    assert "is Pending (Unschedulable: 0/1 nodes), so no heartbeat can end them" in said, said
    assert "UTC (activeDeadlineSeconds 3600)" in said and "cleanup --run-id r1" in said, said


def test_stop_stops_the_heartbeat(monkeypatch):
    access = _started(monkeypatch, _pod("node-access-anchor-x"))
    access.k8s.get = lambda kind, name: (_ for _ in ()).throw(hp.errors.NotFound(404, "NotFound", "gone"))
    access.heartbeat._stop.clear()
    access.stop()
    assert access.heartbeat._stop.is_set()


def _reaping(monkeypatch, refuse: str = "") -> tuple[hp.HelperPodNodeAccess, list[dict]]:
    """A started HelperPodNodeAccess with a gRPC relay image; ``refuse``: a kind whose create is Forbidden."""
    created: list[dict] = []

    class Recording(StartK8s):
        def create(self, obj):
            if obj["kind"] == refuse:
                raise hp.errors.Forbidden(403, "Forbidden", f'cannot create resource "{obj["kind"].lower()}s"')
            created.append(obj)
            return super().create(obj)

    monkeypatch.setattr(hp.waits, "default_service_account", lambda *a, **k: None)
    monkeypatch.setattr(hp.waits, "pod_running", lambda *a, **k: None)
    access = hp.HelperPodNodeAccess(
        Recording([_pod("node-access-anchor-x")]), ["n0"], "r1", grpc_image="relay@sha256:ab", stale=120, interval=60
    )
    access.start()
    access.heartbeat.stop()
    return access, created


def test_with_a_python_image_the_anchor_deletes_the_namespace_with_a_role_inside_the_namespace(monkeypatch):
    """Issue 27 §4: after SIGKILL nothing of the run is left. The anchor runs the reaper as its own
    ServiceAccount; its only permission is delete of this namespace (resourceNames), granted by a Role and
    RoleBinding inside the namespace (gone with it; nothing cluster-scoped, no owner reference, no finalizer).
    Source: kubernetes/kubernetes#134929 (a namespaced Role's rule on its own Namespace)."""
    access, created = _reaping(monkeypatch)
    kinds = {o["kind"]: o for o in created}
    role, binding, job = kinds["Role"], kinds["RoleBinding"], kinds["Job"]
    assert "ClusterRole" not in kinds and "ClusterRoleBinding" not in kinds
    assert role["metadata"]["namespace"] == access.namespace == binding["metadata"]["namespace"]
    assert "ownerReferences" not in role["metadata"] and "ownerReferences" not in binding["metadata"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete"], "resourceNames": [access.namespace]}
    ]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    assert binding["roleRef"] == ref
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": hp.ANCHOR, "namespace": access.namespace}]
    assert kinds["ServiceAccount"]["metadata"]["namespace"] == access.namespace
    assert all("finalizers" not in o["metadata"] for o in created)
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "relay@sha256:ab" and container["command"][:2] == ["python", "-c"]
    assert container["command"][3:] == [
        "/heartbeat/annotations",
        "120",
        "5",
        access.namespace,
        heartbeat.ANNOTATION,
        "/dev/termination-log",
    ]
    assert pod["serviceAccountName"] == hp.ANCHOR and pod["automountServiceAccountToken"] is True
    assert access.reaper == "" and "end about 120 s after its last heartbeat with their namespace" in access.lifetime


def test_without_the_reapers_role_the_anchor_only_ends_the_pods_and_says_the_namespace_stays(monkeypatch):
    access, created = _reaping(monkeypatch, refuse="Role")
    job = next(o for o in created if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == heartbeat.anchor_command(120) and container["image"] == "busybox:1.36"
    assert job["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    said = access.lifetime
    assert "the reaper's role could not be created (" in said and 'cannot create resource "roles"' in said
    assert "the empty namespace stays until `dra-conformance cleanup`" in said, said
