"""The forwarder keeps serving a port after accept() fails (conformance_lab.local.netfwd; breaker, session 12:
one EMFILE ended the listener's thread and the cluster's API port was dead for its life). A real listener in a
child process whose descriptors are used up (RLIMIT_NOFILE, the kernel's own EMFILE), a real connection."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading

from tests.clusters.test_netns import _echo_server

CHILD = textwrap.dedent(
    """
    import os, resource, socket, sys, threading
    from conformance_lab.local import netfwd
    target = netfwd.Endpoint("", "127.0.0.1", int(sys.argv[1]))
    lsock = socket.create_server(("127.0.0.1", 0))
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    held = []
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))  # every descriptor up to the limit
    except OSError:
        pass
    print(lsock.getsockname()[1], flush=True)
    threading.Thread(target=netfwd._accept_loop, args=(lsock, target, None, own), daemon=True).start()
    sys.stdin.readline()  # the test saw the failed accept: give the descriptors back
    for fd in held:
        os.close(fd)
    sys.stdin.readline()
    """
)


def test_an_accept_that_fails_with_emfile_is_retried_and_the_port_serves_again():
    # given: a listener whose process has no descriptor left, and a client connecting to it
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_echo_server, args=(server,), daemon=True).start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(server.getsockname()[1])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        port = int(child.stdout.readline())
        client = socket.create_connection(("127.0.0.1", port), timeout=10)  # queued by the kernel (backlog)
        # when: accept() fails (EMFILE), then descriptors are free again
        logged = child.stderr.readline()
        assert "accept on 127.0.0.1:" in logged and "Too many open files" in logged, logged
        child.stdin.write("free\n")
        child.stdin.flush()
        # then: the waiting connection is accepted and relayed, and the recovery is logged
        with client:
            client.sendall(b"still served")
            client.shutdown(socket.SHUT_WR)
            assert client.recv(100) == b"STILL SERVED"
        assert "works again after" in child.stderr.readline()
    finally:
        child.kill()
        child.wait(timeout=10)
        server.close()
