"""TCP forwarder between network namespaces: the host's loopback reaches a local cluster's API server (and its
controller-manager and scheduler) inside the cluster's namespace, and a node's loopback reaches the host's lab
registry. One process per cluster (``python -m conformance_lab.local.netfwd SPEC...``), recorded in the cluster
state as ``netfwd`` and stopped by tear-down like any other host process.

A SPEC is ``LISTEN=TARGET``, each ``[NETNS@]HOST:PORT``; NETNS is a namespace file (``/proc/<pid>/ns/net``),
absent = the forwarder's own (the host's). Listening sockets are made in the listen namespace, each accepted
connection gets an outgoing socket made in the target namespace (a socket stays in the namespace it was created
in: network_namespaces(7); ``setns(2)`` with ``CLONE_NEWNET`` switches only the calling thread). One thread per
listener, two per connection; an unreachable target closes the accepted connection; a failed accept() (out of
descriptors) is logged and retried with back-off. ``netfwd ready`` is printed once every listener is bound; a spec
that cannot be bound exits 2 naming it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import os
import socket
import sys
import threading
import time

CLONE_NEWNET = 0x40000000  # include/uapi/linux/sched.h
READY = "netfwd ready"
BACKOFF_S, BACKOFF_MAX_S = 0.05, 1.0  # pauses after a failed accept(): doubled per failure, reset on success
_CLOSED = (errno.EBADF, errno.EINVAL, errno.ENOTSOCK)  # the listening socket itself is gone
_libc = ctypes.CDLL(None, use_errno=True)


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """``host:port`` in network namespace ``netns`` (a namespace file path; "" = the forwarder's own)."""

    netns: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.netns + '@' if self.netns else ''}{self.host}:{self.port}"


def parse(spec: str) -> tuple[Endpoint, Endpoint]:
    """``LISTEN=TARGET`` (module docstring) -> (listen, target). Raises ValueError naming the spec."""
    try:
        left, right = spec.split("=", 1)
        return _endpoint(left), _endpoint(right)
    except ValueError:
        raise ValueError(f"forward spec {spec!r} is not [NETNS@]HOST:PORT=[NETNS@]HOST:PORT") from None


def _endpoint(text: str) -> Endpoint:
    netns, _, addr = text.rpartition("@")
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(text)
    return Endpoint(netns, host, int(port))


def spec(listen: Endpoint, target: Endpoint) -> str:
    """The SPEC argument of one forward (inverse of :func:`parse`)."""
    return f"{listen}={target}"


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def socket_in(netns_fd: int | None, own_fd: int) -> socket.socket:
    """A TCP socket created in namespace ``netns_fd`` (None: this thread's own); the thread returns to
    ``own_fd`` before this returns. Raises OSError."""
    if netns_fd is None:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    _setns(netns_fd)
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    finally:
        _setns(own_fd)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _serve(conn: socket.socket, target: Endpoint, target_fd: int | None, own_fd: int) -> None:
    try:
        up = socket_in(target_fd, own_fd)
        up.settimeout(5)
        up.connect((target.host, target.port))
        up.settimeout(None)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=_pump, args=(up, conn), daemon=True)
    back.start()
    _pump(conn, up)
    back.join()
    conn.close()
    up.close()


def _accept_loop(lsock: socket.socket, target: Endpoint, target_fd: int | None, own_fd: int) -> None:
    """Accept connections for ``target`` until the listening socket is closed. A failed accept (EMFILE/ENFILE:
    out of descriptors, ENOBUFS, ECONNABORTED ...) or thread start is logged once per streak and retried after a
    growing pause (:data:`BACKOFF_S` .. :data:`BACKOFF_MAX_S`): the port stays served once the cause is gone
    (breaker, session 12: one EMFILE used to end the thread and the port was dead for the cluster's life)."""
    where, failures, pause = lsock.getsockname(), 0, BACKOFF_S
    while True:
        conn = None
        try:
            conn, _ = lsock.accept()
            threading.Thread(target=_serve, args=(conn, target, target_fd, own_fd), daemon=True).start()
        except (OSError, RuntimeError) as exc:  # RuntimeError: "can't start new thread"
            if conn is not None:
                conn.close()
            if isinstance(exc, OSError) and exc.errno in _CLOSED:
                _log(f"listener {where[0]}:{where[1]} closed ({exc}); no longer serving it")
                return
            if not failures:
                _log(f"accept on {where[0]}:{where[1]} failed: {exc}; retrying, at most {BACKOFF_MAX_S:g} s apart")
            time.sleep(pause)
            failures, pause = failures + 1, min(pause * 2, BACKOFF_MAX_S)
            continue
        if failures:
            _log(f"accept on {where[0]}:{where[1]} works again after {failures} failure(s)")
            failures, pause = 0, BACKOFF_S


def _log(line: str) -> None:
    print(f"netfwd: {line}", file=sys.stderr, flush=True)


def listen(pairs: list[tuple[Endpoint, Endpoint]]) -> list[threading.Thread]:
    """Bind every listener and start its accept thread; returns the threads. Raises OSError naming the
    endpoint that could not be bound (namespace gone, port taken)."""
    own_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fds: dict[str, int] = {}
    threads = []
    for src, dst in pairs:
        try:
            for ns in (src.netns, dst.netns):
                if ns and ns not in fds:
                    fds[ns] = os.open(ns, os.O_RDONLY)
            lsock = socket_in(fds.get(src.netns), own_fd)
            lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            lsock.bind((src.host, src.port))
            lsock.listen(128)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot listen on {src} (for {dst}): {exc.strerror or exc}") from None
        t = threading.Thread(target=_accept_loop, args=(lsock, dst, fds.get(dst.netns), own_fd), daemon=True)
        t.start()
        threads.append(t)
    return threads


def main(argv: list[str]) -> int:
    """Entry point: forward every SPEC until killed. Exit 2 on a bad or unbindable spec."""
    try:
        threads = listen([parse(a) for a in argv])
    except (ValueError, OSError) as exc:
        print(f"netfwd: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"{READY}: {' '.join(argv)}", flush=True)
    for t in threads:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
