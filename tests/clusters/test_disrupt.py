"""The local provider's disruptive operations on stand-in processes (no cluster): a node reboot stops the
node's processes in order, empties only that node's run directory and starts everything again, also when a
step fails; a kubelet that does not come back is named with its log; a kube-controller-manager restart runs
the test's changes while it is stopped and starts it again whatever they raise. Also the capability facts of
the disruptive lane and the host deployer's remove/reinstall."""

from __future__ import annotations

import sys
import time

import pytest
from conformance_lab.local import config as configlib
from conformance_lab.local import disrupt
from conformance_lab.local import state as statelib
from conformance_lab.local.node_config import node_paths
from conformance_lab.local.processes import HostProcess

from conformance.core.errors import WaitFailed
from conformance.drivers.base import DeployedDriver, HostProcessDriver
from conformance.runner import facts

LISTEN = "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(600)"


class ReadyApi:
    """Answers GET /api/v1/nodes[/<name>] with every node Ready and a heartbeat of now."""

    def get_json(self, path):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        node = {
            "metadata": {"name": "c-node-0"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": now}]},
        }
        return {"items": [node]} if path == "/api/v1/nodes" else node


class NotReadyApi(ReadyApi):
    """Every node NotReady (a kubelet that never comes back)."""

    def get_json(self, path):
        doc = super().get_json(path)
        for node in doc.get("items", [doc]):
            node["status"]["conditions"][0]["status"] = "False"
        return doc


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A one-node layout under tmp_path with stand-ins for containerd (listens on the node's socket), the
    kubelet and a driver plugin; host-system calls recorded, not made."""
    monkeypatch.setattr(configlib, "STATE_ROOT", tmp_path / "state")
    monkeypatch.setattr(configlib, "RUN_ROOT", tmp_path / "run")
    monkeypatch.setattr(statelib.ClusterState, "save", lambda self: None)
    calls: list[str] = []
    monkeypatch.setattr(disrupt.hostsys, "kill_cgroup", lambda name: calls.append(f"kill {name}") or set())
    monkeypatch.setattr(disrupt.hostsys, "unmount_under", lambda *d: calls.append(f"umount {d[0].name}") or [])
    monkeypatch.setattr(disrupt.hostsys, "remove_dead_shim_sockets", lambda: [])
    lay = configlib.Layout(name="c", slot=9, nodes=1, log_dir=tmp_path / "logs")
    np = node_paths(lay, 0)
    np.cdi_dir.mkdir(parents=True)
    (np.cdi_dir / "claim.json").write_text("{}")
    state = statelib.ClusterState(name="c", slot=9, nodes=1, log_dir=str(lay.log_dir))
    logs = lay.log_dir
    for name, argv in (
        ("containerd", [sys.executable, "-c", LISTEN, str(np.containerd_socket)]),
        ("kubelet", ["sleep", "600"]),
        ("driver-reference", ["sleep", "600"]),
    ):
        state.processes.append(HostProcess.spawn(name, np.name, argv, logs / f"{name}.log"))
    state.processes.append(HostProcess.spawn("kube-controller-manager", "", ["sleep", "600"], logs / "kcm.log"))
    yield state, lay, np, calls
    for proc in state.processes:
        proc.stop(timeout=1)


def _pids(state):
    return {p.name: p.pid for p in state.processes}


def test_reboot_clears_only_the_node_run_dir_and_starts_everything_again(cluster):
    state, lay, np, calls = cluster
    before = _pids(state)
    cleared = disrupt.reboot_node(state, lay, ReadyApi(), np.name, timeout=10)
    after = _pids(state)
    node_procs = ("containerd", "kubelet", "driver-reference")
    assert all(after[n] != before[n] and p.is_running() for n in node_procs for p in [state.process(n, np.name)])
    assert after["kube-controller-manager"] == before["kube-controller-manager"]
    assert str(np.cdi_dir) in cleared and np.cdi_dir.is_dir() and not list(np.cdi_dir.iterdir())
    assert calls == [f"kill {lay.cgroup_root(0)}", "umount node-0", "umount kubelet"]


def test_reboot_restores_the_node_when_a_step_fails(cluster, monkeypatch):
    state, lay, np, _calls = cluster
    monkeypatch.setattr(disrupt.hostsys, "kill_cgroup", lambda name: {4242})
    with pytest.raises(RuntimeError, match="survived the emulated power-off"):
        disrupt.reboot_node(state, lay, ReadyApi(), np.name, timeout=10)
    assert all(p.is_running() for p in state.processes)


def test_a_kubelet_that_does_not_come_back_is_named_with_its_log(cluster):
    state, lay, np, _calls = cluster
    kubelet = state.process("kubelet", np.name)
    kubelet.argv = ["sh", "-c", "echo kubelet cannot start; exit 1"]
    with pytest.raises(WaitFailed, match="kubelet exited; its log") as info:
        disrupt.reboot_node(state, lay, NotReadyApi(), np.name, timeout=30)
    assert str(kubelet.log_path) in str(info.value) and "kubelet cannot start" in str(info.value)


def test_unknown_node_is_refused_with_the_node_names(cluster):
    state, lay, _np, _calls = cluster
    with pytest.raises(KeyError, match="c-node-0"):
        disrupt.reboot_node(state, lay, ReadyApi(), "elsewhere", timeout=10)


def test_controller_manager_restart_runs_changes_while_stopped_and_restarts_after_an_error(cluster, monkeypatch):
    state, lay, _np, _calls = cluster
    monkeypatch.setattr(disrupt, "_kcm_healthy", lambda port: (True, "ok"))
    kcm = state.process("kube-controller-manager")
    seen = []
    disrupt.restart_controller_manager(state, lay, lambda: seen.append(kcm.is_running()))
    assert seen == [False] and kcm.is_running()

    def boom():
        raise ValueError("test change failed")

    with pytest.raises(ValueError, match="test change failed"):
        disrupt.restart_controller_manager(state, lay, boom)
    assert kcm.is_running()


def test_disruption_facts_name_the_provider_that_cannot(cluster):
    from conformance_lab.local.handle import LocalClusterHandle

    state, lay, _np, _calls = cluster
    handle = LocalClusterHandle.__new__(LocalClusterHandle)
    handle.name = "c"
    got = facts.disruptions(handle, None)
    assert got["node_reboot"][0] and got["controller_manager_restart"][0] and not got["driver_reinstall"][0]
    other = facts.disruptions(
        object(), DeployedDriver(name="d", device_classes=("x",), profile=None, deploy_mode="helm")
    )
    assert not other["node_reboot"][0] and "cannot reboot" in other["node_reboot"][1]
    assert not other["driver_reinstall"][0]


def test_host_driver_remove_and_reinstall(tmp_path):
    procs = {n: HostProcess.spawn("driver", n, ["sleep", "600"], tmp_path / f"{n}.log") for n in ("a", "b")}
    driver = HostProcessDriver(name="d", device_classes=("x",), profile=None, deploy_mode="bundled", processes=procs)
    try:
        assert facts.disruptions(None, driver)["driver_reinstall"][0]
        driver.remove_driver()
        assert not any(p.is_running() for p in procs.values())
        driver.reinstall_driver()
        assert all(p.is_running() for p in procs.values())
        running = procs["b"].pid
        procs["a"].stop(timeout=1)
        driver.reinstall_driver()  # starts only what does not run
        assert procs["a"].is_running() and procs["b"].pid == running
    finally:
        for p in procs.values():
            p.stop(timeout=1)


def test_reboot_of_a_node_in_its_own_mount_namespace_drops_and_recreates_the_namespace(cluster, tmp_path, monkeypatch):
    """daemonset_paths: the power-off leaves no process in the node's namespace (an unrecorded one is killed),
    the boot binds the re-created CDI dir in a new namespace that containerd and the kubelet enter; nothing of
    either namespace shows on the host. Needs root (unshare, mount)."""
    from conformance_lab.local import hostsys, node_mounts  # noqa: PLC0415

    state, lay, np, _calls = cluster
    target = tmp_path / "std-cdi"
    target.mkdir()
    monkeypatch.setattr(node_mounts, "bind_mounts", lambda _np: [(np.cdi_dir, target)])
    for proc in [p for p in state.processes if p.node == np.name]:
        proc.stop(timeout=1)
    state.processes = [p for p in state.processes if p.node != np.name]
    holder = HostProcess.spawn(node_mounts.HOLDER, np.name, node_mounts.holder_argv(np), lay.log_dir / "holder.log")
    assert node_mounts.wait_ready(np, holder.pid)[0], holder.tail()
    state.processes.append(holder)
    for name, argv in (
        ("containerd", [sys.executable, "-c", LISTEN, str(np.containerd_socket)]),
        ("kubelet", ["sleep", "600"]),
    ):
        state.processes.append(
            HostProcess.spawn(name, np.name, node_mounts.enter(holder.pid, argv), lay.log_dir / name)
        )
    stray = HostProcess.spawn("stray", np.name, node_mounts.enter(holder.pid, ["sleep", "600"]), lay.log_dir / "s")
    old_ns, old_pid = node_mounts.namespace_of(holder.pid), holder.pid
    entered = [stray, state.process("containerd", np.name), state.process("kubelet", np.name)]
    deadline = time.monotonic() + 30
    while any(node_mounts.namespace_of(p.pid) != old_ns for p in entered) and time.monotonic() < deadline:
        time.sleep(0.05)  # nsenter has entered the namespace
    disrupt.reboot_node(state, lay, ReadyApi(), np.name, timeout=10)
    new_ns = node_mounts.namespace_of(holder.pid)
    assert holder.pid != old_pid and new_ns  # (a freed namespace id is reused: ids cannot be compared)
    assert not stray.is_running() and node_mounts.namespace_of(old_pid) == ""
    restarted = [state.process(name, np.name) for name in ("containerd", "kubelet")]
    assert all(p.argv[1] == f"--mount=/proc/{holder.pid}/ns/mnt" and p.is_running() for p in restarted)
    deadline = time.monotonic() + 30
    while any(node_mounts.namespace_of(p.pid) != new_ns for p in restarted) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [node_mounts.namespace_of(p.pid) for p in restarted] == [new_ns, new_ns]
    assert str(target) in node_mounts.mount_points_of(holder.pid)
    assert hostsys.mounts_under(tmp_path) == []


def test_only_a_driver_the_run_deployed_may_lose_a_resourceslice():
    """A driver the cluster's admin installed (preinstalled) never has its ResourceSlices deleted by a test
    (issue 22 §1); one the run deployed (helm, bundled...) may, as a kubelet does at start-up."""
    mine = DeployedDriver(name="d", device_classes=("x",), profile=None, deploy_mode="helm")
    theirs = DeployedDriver(name="d", device_classes=("x",), profile=None, deploy_mode="preinstalled")
    assert facts.slices_writable(mine) == (True, "the run deployed the driver (helm) and removes it at the end")
    able, why = facts.slices_writable(theirs)
    assert not able and "installed by the cluster's admin" in why and "preinstalled" in why
    assert not facts.slices_writable(None)[0]
