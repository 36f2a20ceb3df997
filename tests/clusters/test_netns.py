"""Unit tests of a local cluster's network namespaces (conformance_lab.local.netns) and of the forwarder
between namespaces (conformance_lab.local.netfwd): addresses, ip commands, forward specs, a real forward."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest
from conformance_lab.local import netfwd, netns
from conformance_lab.local.config import Layout
from conformance_lab.local.processes import HostProcess


def _lay(tmp_path, nodes: int = 2, slot: int = 3) -> Layout:
    return Layout(name="nx", slot=slot, nodes=nodes, log_dir=tmp_path)


def test_addresses_and_forwarded_ports_follow_the_slot(tmp_path):
    lay = _lay(tmp_path)
    assert (lay.bridge_ip, lay.node_ip(0), lay.node_ip(1)) == ("10.201.3.1", "10.201.3.10", "10.201.3.11")
    assert lay.forwarded_ports() == {
        "kube-apiserver": 6446,
        "kube-controller-manager": 20302,
        "kube-scheduler": 20303,
    }


def test_node_commands_make_its_link_peer_and_routes_to_the_other_nodes(tmp_path):
    lay = _lay(tmp_path, nodes=3)
    cmds = netns.node_commands(lay, 1, cluster_pid=42)
    assert cmds[0] == "link add eth0 type veth peer name vn1 netns 42"
    assert "addr add 10.201.3.11/24 dev eth0" in cmds
    assert [c for c in cmds if c.startswith("route")] == [
        "route add 10.88.48.0/24 via 10.201.3.10",
        "route add 10.88.50.0/24 via 10.201.3.12",
        "route add 10.0.3.0/24 via 10.201.3.1",  # hostNetwork pods -> ClusterIPs (kube-proxy's nat OUTPUT)
    ]
    assert netns.attach_commands(lay, 1)[-1] == "route add 10.88.49.0/24 via 10.201.3.11"


def test_holders_name_their_host_and_enter_wraps_argv(tmp_path):
    argv = netns.node_holder_argv(_lay(tmp_path), 0)
    assert argv[:4] == ["unshare", "--net", "--uts", "--"] and "echo nx-node-0 > /proc/sys/kernel/hostname" in argv[-1]
    assert netns.enter(7, ["kubelet"]) == ["nsenter", "--net=/proc/7/ns/net", "--uts=/proc/7/ns/uts", "--", "kubelet"]


def test_forward_specs_cover_the_control_plane_ports_and_the_mirror_per_node(tmp_path):
    specs = netns.forward_specs(_lay(tmp_path), 5, [6, 7], mirror="127.0.0.1:5000")
    assert specs[0] == "127.0.0.1:6446=/proc/5/ns/net@127.0.0.1:6446"
    assert "/proc/7/ns/net@127.0.0.1:6446=/proc/5/ns/net@127.0.0.1:6446" in specs
    assert specs[-2:] == [
        "/proc/6/ns/net@127.0.0.1:5000=127.0.0.1:5000",
        "/proc/7/ns/net@127.0.0.1:5000=127.0.0.1:5000",
    ]
    for s in specs:
        assert netfwd.spec(*netfwd.parse(s)) == s


@pytest.mark.parametrize("bad", ["127.0.0.1:1", "a=b", "1.2.3.4:0=1.2.3.4:1", "x@:80=1.1.1.1:80"])
def test_a_bad_spec_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="is not"):
        netfwd.parse(bad)


def _echo_server(sock: socket.socket) -> None:
    conn, _ = sock.accept()
    with conn:
        while data := conn.recv(1024):
            conn.sendall(data.upper())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _forwarder(tmp_path, specs: list[str]) -> HostProcess:
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}
    proc = HostProcess.spawn(
        netns.FORWARDER,
        "",
        [sys.executable, "-m", "conformance_lab.local.netfwd", *specs],
        tmp_path / "fwd.log",
        env=env,
    )
    netns.wait_forwarder(proc)
    return proc


def test_the_forwarder_relays_both_ways_and_exits_2_on_a_taken_port(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_echo_server, args=(server,), daemon=True).start()
    port = _free_port()
    proc = _forwarder(tmp_path, [f"127.0.0.1:{port}=127.0.0.1:{server.getsockname()[1]}"])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"hello")
            c.shutdown(socket.SHUT_WR)
            assert c.recv(100) == b"HELLO"
        taken = subprocess.run(
            [sys.executable, "-m", "conformance_lab.local.netfwd", f"127.0.0.1:{port}=127.0.0.1:1"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert taken.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr, taken.stderr
    finally:
        proc.stop(timeout=2)
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_the_host_loopback_reaches_a_server_inside_a_namespace(tmp_path):
    holder = HostProcess.spawn(netns.NODE_HOLDER, "n", netns.node_holder_argv(_lay(tmp_path), 0), tmp_path / "h.log")
    try:
        netns.wait_holder(holder)
        inner = subprocess.Popen(
            netns.enter(
                holder.pid,
                [
                    sys.executable,
                    "-c",
                    (
                        "import socket; s = socket.create_server(('127.0.0.1', 7777)); print('up', flush=True); "
                        "c, _ = s.accept(); c.sendall(socket.gethostname().encode()); c.close()"
                    ),
                ],
            ),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert inner.stdout.readline().strip() == "up"
        port = _free_port()
        proc = _forwarder(tmp_path, [f"127.0.0.1:{port}={netns.netns_file(holder.pid)}@127.0.0.1:7777"])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                assert c.recv(100) == b"nx-node-0"  # served inside: the namespace's own hostname
        finally:
            proc.stop(timeout=2)
            inner.kill()
            inner.wait()
    finally:
        holder.stop(timeout=2)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_socket_bound_in_a_node_namespace_counts_as_live_for_the_shim_socket_sweep(tmp_path):
    """/proc/net/unix lists only the reader's namespace: a node's shim socket must still count as live, or a
    tear-down elsewhere deletes it (containerd then fails "failed to start shim ... no such file")."""
    from conformance_lab.local import hostsys

    path = tmp_path / "shim.sock"
    holder = HostProcess.spawn(netns.NODE_HOLDER, "n", netns.node_holder_argv(_lay(tmp_path), 0), tmp_path / "h.log")
    try:
        netns.wait_holder(holder)
        code = (
            f"import socket; s = socket.socket(socket.AF_UNIX); s.bind({str(path)!r}); s.listen(); "
            "print('up', flush=True); input()"
        )
        inner = subprocess.Popen(netns.enter(holder.pid, [sys.executable, "-c", code]), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert inner.stdout.readline().strip() == "up"
            assert str(path) not in open("/proc/net/unix").read()  # the host's view misses it
            assert str(path) in hostsys.bound_unix_paths()
        finally:
            inner.kill()
            inner.wait()
    finally:
        holder.stop(timeout=2)


def test_forwarder_ready_line_of_an_earlier_start_does_not_count():
    """wait_forwarder reads only what the latest start wrote: the log is appended to (breaker s12 F6)."""
    old = "\n==== 10:00:00 start: netfwd a\nnetfwd ready: a\n==== 10:05:00 start: netfwd b\nbind failed"
    assert "ready" not in netns.this_start(old)
    assert "ready" in netns.this_start(old + "\nnetfwd ready: b")
    assert netns.this_start("netfwd ready: x") == "netfwd ready: x"
