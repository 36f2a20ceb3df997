"""Network namespaces of a local cluster: nothing of its network touches the host's.

- ``netns-cluster`` (one recorded holder process, ``unshare --net --uts``): the control plane's namespace with a
  bridge ``br0`` at ``Layout.bridge_ip`` (``10.201.<slot>.1/24``); etcd, kube-apiserver, controller-manager,
  scheduler and kwok are entered into it (``nsenter --net``), and routes to each node's pod subnet via the node.
- ``netns-node`` per node (``unshare --net --uts``, hostname = node name, ``ip_forward=1`` inside): a veth ``eth0``
  with ``Layout.node_ip(i)``, its peer ``vn<i>`` on the cluster bridge, routes to the other nodes' pod subnets
  and to the Service CIDR via the bridge (a hostNetwork pod's connect() needs a route before nat OUTPUT's DNAT);
  the node's containerd, kubelet and kube-proxy (and so the CNI bridge, the pods' veths, every iptables rule of
  kube-proxy, the kubelet and the CNI plugin) live there: a real node's shape.
- ``netfwd`` (:mod:`conformance_lab.local.netfwd`): the host's ``127.0.0.1:<apiserver|kcm|scheduler port>`` to
  the same port in the cluster namespace (kubeconfigs keep ``https://127.0.0.1:<port>``), and each node's
  ``127.0.0.1:<apiserver port>`` too (a host kubeconfig works for a plugin started in the node); with a
  registry mirror, each node's ``127.0.0.1:<port>`` to the host's.
Namespaces are not named (no ``/run/netns`` file): each lives while a process is in it and the kernel destroys
it with its links when the last one goes, so tear-down (killing the recorded processes) removes everything,
also of a half-made cluster. Sources: network_namespaces(7), veth(4), unshare(1), nsenter(1), ip-link(8).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

from conformance_lab.local.config import Layout
from conformance_lab.local.processes import HostProcess

CLUSTER_HOLDER = "netns-cluster"
NODE_HOLDER = "netns-node"
FORWARDER = "netfwd"
BRIDGE = "br0"
NODE_LINK = "eth0"


def peer_link(i: int) -> str:
    """Name of node i's veth end on the cluster bridge (in the cluster namespace)."""
    return f"vn{i}"


def _holder(hostname: str) -> list[str]:
    script = (
        f"set -e; echo {hostname} > /proc/sys/kernel/hostname; echo 1 > /proc/sys/net/ipv4/ip_forward; "
        "ip link set lo up; exec sleep infinity"
    )
    return ["unshare", "--net", "--uts", "--", "sh", "-c", script]


def cluster_holder_argv(lay: Layout) -> list[str]:
    """Command line of the process holding the cluster namespace (hostname ``<name>-control-plane``)."""
    return _holder(f"{lay.name}-control-plane")


def node_holder_argv(lay: Layout, i: int) -> list[str]:
    """Command line of the process holding node i's namespace (hostname = node name)."""
    return _holder(lay.node_name(i))


def netns_file(pid: int) -> str:
    """The network namespace file of process ``pid``."""
    return f"/proc/{pid}/ns/net"


def enter(holder_pid: int, argv: list[str]) -> list[str]:
    """``argv`` run in the network and UTS namespaces of ``holder_pid`` (nsenter execs: the pid stays argv's)."""
    return ["nsenter", f"--net=/proc/{holder_pid}/ns/net", f"--uts=/proc/{holder_pid}/ns/uts", "--", *argv]


def wait_holder(proc: HostProcess, timeout: float = 20.0) -> None:
    """Wait until ``proc`` (a holder) sleeps in a namespace of its own. Raises RuntimeError with its log."""
    own = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            comm = open(f"/proc/{proc.pid}/comm").read().strip()
            if comm == "sleep" and os.readlink(netns_file(proc.pid)) != own:
                return
        except OSError:
            pass
        if not proc.is_running():
            break
        time.sleep(0.05)
    raise RuntimeError(
        f"network namespace holder {proc.name} of {proc.node or 'the cluster'} did not start; "
        f"its log ({proc.log_path}) ends with:\n{proc.tail()}"
    )


def ip_batch(pid: int, commands: list[str]) -> None:
    """Run ``ip -batch`` ``commands`` in the network namespace of ``pid``. Raises RuntimeError naming them."""
    proc = subprocess.run(
        ["nsenter", f"--net={netns_file(pid)}", "ip", "-batch", "-"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"`ip -batch` in the namespace of pid {pid} failed: {proc.stderr.strip()}; commands: {commands}"
        )


def cluster_commands(lay: Layout) -> list[str]:
    """``ip`` commands making the cluster bridge."""
    return [f"link add {BRIDGE} type bridge", f"addr add {lay.bridge_ip}/24 dev {BRIDGE}", f"link set {BRIDGE} up"]


def node_commands(lay: Layout, i: int, cluster_pid: int) -> list[str]:
    """``ip`` commands run in node i's namespace: its veth (peer made in the cluster namespace), address, routes
    to the other nodes' pod subnets, and a route to the Service CIDR via the bridge: a socket in the node's own
    namespace (a hostNetwork pod, e.g. dra-driver-cpu's) is routed before kube-proxy's nat OUTPUT rule rewrites
    the ClusterIP, so without it connect() fails "network is unreachable"."""
    cmds = [
        f"link add {NODE_LINK} type veth peer name {peer_link(i)} netns {cluster_pid}",
        f"addr add {lay.node_ip(i)}/24 dev {NODE_LINK}",
        f"link set {NODE_LINK} up",
    ]
    routes = [f"route add {lay.pod_subnet(j)} via {lay.node_ip(j)}" for j in range(lay.nodes) if j != i]
    return cmds + routes + [f"route add {lay.service_cidr} via {lay.bridge_ip}"]


def attach_commands(lay: Layout, i: int) -> list[str]:
    """``ip`` commands run in the cluster namespace: node i's peer on the bridge, the route to its pod subnet."""
    return [
        f"link set {peer_link(i)} master {BRIDGE}",
        f"link set {peer_link(i)} up",
        f"route add {lay.pod_subnet(i)} via {lay.node_ip(i)}",
    ]


def wire(lay: Layout, cluster_pid: int, node_pids: list[int]) -> None:
    """Make the bridge, each node's link and the routes (holders already running). Raises RuntimeError."""
    ip_batch(cluster_pid, cluster_commands(lay))
    for i, pid in enumerate(node_pids):
        ip_batch(pid, node_commands(lay, i, cluster_pid))
        ip_batch(cluster_pid, attach_commands(lay, i))


def forward_specs(lay: Layout, cluster_pid: int, node_pids: list[int], mirror: str = "") -> list[str]:
    """The forwarder's SPEC arguments (:mod:`conformance_lab.local.netfwd`): the host's loopback ports of
    :meth:`Layout.forwarded_ports` into the cluster namespace; ``mirror`` (``127.0.0.1:PORT``) from each node's
    loopback to the host's."""
    cluster = netns_file(cluster_pid)
    specs = [f"127.0.0.1:{p}={cluster}@127.0.0.1:{p}" for p in lay.forwarded_ports().values()]
    api = lay.apiserver_port  # a host kubeconfig works in a node too (a host-mode plugin started there: dranet)
    specs += [f"{netns_file(pid)}@127.0.0.1:{api}={cluster}@127.0.0.1:{api}" for pid in node_pids]
    if mirror:
        host, _, port = mirror.rpartition(":")
        host = "127.0.0.1" if host == "localhost" else host
        specs += [f"{netns_file(pid)}@{host}:{port}={host}:{port}" for pid in node_pids]
    return specs


def wait_forwarder(proc: HostProcess, timeout: float = 20.0) -> None:
    """Wait until the forwarder printed ``netfwd ready``. Raises RuntimeError with its log when it exits."""
    from conformance_lab.local.netfwd import READY  # noqa: PLC0415 - the module is mostly run as a program

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if READY in this_start(proc.tail(40)):
            return
        if not proc.is_running():
            break
        time.sleep(0.05)
    raise RuntimeError(f"the port forwarder did not start; its log ({proc.log_path}) ends with:\n{proc.tail()}")


def this_start(log_tail: str) -> str:
    """The part of a process log tail written by its latest start: the log is appended to, each start begins with
    a ``==== HH:MM:SS start: ...`` line (processes.spawn), and an earlier run's "ready" must not count."""
    head = log_tail.rfind("\n==== ")
    if head < 0 and log_tail.startswith("==== "):
        head = 0
    return log_tail[head:] if head >= 0 else log_tail


def node_holder_pid(processes: list[HostProcess], node: str) -> int | None:
    """The running holder pid of ``node``'s namespace among ``processes``; None when absent or gone (a
    cluster made before namespaces, or torn down)."""
    proc = next((p for p in processes if p.name == NODE_HOLDER and p.node == node), None)
    return proc.pid if proc is not None and proc.is_running() else None


def in_node(processes: list[HostProcess], node: str, argv: list[str]) -> list[str]:
    """``argv`` run in ``node``'s network namespace when it has one (else unchanged: the host's)."""
    pid = node_holder_pid(processes, node)
    return ["nsenter", f"--net={netns_file(pid)}", "--", *argv] if pid else list(argv)


def start(lay: Layout, spawn: Callable[[str, str, list[str]], HostProcess], mirror: str = "") -> tuple[int, list[int]]:
    """Start the holders (``spawn(name, node, argv)`` records each), wire them and start the forwarder;
    returns (cluster holder pid, node holder pids by index). Raises RuntimeError naming the step and its log."""
    cluster = spawn(CLUSTER_HOLDER, "", cluster_holder_argv(lay))
    nodes = [spawn(NODE_HOLDER, lay.node_name(i), node_holder_argv(lay, i)) for i in range(lay.nodes)]
    for proc in (cluster, *nodes):
        wait_holder(proc)
    node_pids = [p.pid for p in nodes]
    wire(lay, cluster.pid, node_pids)
    argv = [sys.executable, "-m", "conformance_lab.local.netfwd", *forward_specs(lay, cluster.pid, node_pids, mirror)]
    wait_forwarder(spawn(FORWARDER, "", argv))
    return cluster.pid, node_pids
