"""Unary gRPC calls to a node's unix sockets made from inside a privileged helper pod, for clusters whose node
filesystem this host cannot reach (``--node-access privileged-pod``).

The harness serializes the request with its own generated messages; :data:`RELAY` (a short Python program run
with ``python -c`` by ``kubectl exec`` in the helper pod's ``grpc`` container: an image with Python and grpcio)
sends those bytes unchanged to ``unix://<socket>`` (grpcio passes bytes through when no serializer is given)
and prints the reply bytes, base64, or the gRPC status. :class:`ExecChannel` looks like a ``grpc.Channel`` to
the clients of podresources.py, registration.py and draplugin.py, so they stay one implementation for both
node access modes. Source: gRPC over HTTP/2 (a unary call is one serialized request and one reply message);
``grpc.Channel.unary_unary``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import grpc

PYTHON = "python"  # the reference-driver image's interpreter (its Dockerfile ENTRYPOINT)
RELAY = """
import base64, os, sys, time, grpc
sock, method, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
if len(sock) > 100:  # sun_path limit: dial through the directory's fd
    sock = "/proc/self/fd/%d/%s" % (os.open(os.path.dirname(sock), os.O_RDONLY), os.path.basename(sock))
req, took = base64.b64decode(sys.argv[4]), ""
try:
    with grpc.insecure_channel("unix://" + sock, options=[("grpc.max_receive_message_length", 16 << 20)]) as ch:
        call = ch.unary_unary(method)
        t0 = time.perf_counter()
        try:
            out = call(req, timeout=timeout)
        finally:
            took = " %.6f" % (time.perf_counter() - t0)
    print("DRA-RELAY OK " + base64.b64encode(out).decode() + took)
except grpc.RpcError as e:
    detail = (e.details() or "") if isinstance(e, grpc.Call) else str(e)
    name = e.code().name if isinstance(e, grpc.Call) else "UNKNOWN"
    print("DRA-RELAY ERR " + name + " " + base64.b64encode(detail.encode()).decode() + took)
"""
MARK = "DRA-RELAY "

Exec = Callable[[list[str]], str]  # runs argv in the helper container, returns its stdout+stderr


class RelayError(grpc.RpcError, grpc.Call):
    """A relayed call's gRPC status (``code()``, ``details()``), or UNKNOWN with the helper's output when the
    relay printed no answer (no Python/grpcio in the image, exec refused)."""

    relay_failed = False  # True when the relay gave no answer at all (not a status the driver's socket sent)

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:  # noqa: D102 - grpc.Call
        return self._code

    def details(self) -> str:  # noqa: D102 - grpc.Call
        return self._details

    # the rest of grpc.Call / grpc.RpcContext: nothing to report for a finished relayed call
    def initial_metadata(self):  # noqa: D102
        return ()

    def trailing_metadata(self):  # noqa: D102
        return ()

    def is_active(self) -> bool:  # noqa: D102
        return False

    def time_remaining(self):  # noqa: D102
        return None

    def cancel(self) -> bool:  # noqa: D102
        return False

    def add_callback(self, callback) -> bool:  # noqa: D102
        return False


def relay_seconds(output: str) -> float | None:
    """Seconds the relay measured around the gRPC call inside the helper pod (the last field of its answer
    line: ``OK <reply> <s>`` or ``ERR <code> <detail> <s>``); None when the line has no such field (an older
    relay, or no answer)."""
    for line in reversed(output.splitlines()):
        if line.startswith(MARK):
            parts = line[len(MARK) :].split(" ")
            want = {"OK": 3, "ERR": 4}.get(parts[0])
            try:
                return float(parts[-1]) if len(parts) == want else None
            except ValueError:
                return None
    return None


def parse_reply(output: str) -> bytes:
    """The reply bytes from the relay's output. Raises :class:`RelayError` with the relayed status, or UNKNOWN
    naming the output (last 500 characters) when there is no relay line."""
    for line in reversed(output.splitlines()):
        if not line.startswith(MARK):
            continue
        parts = line[len(MARK) :].split(" ")
        if parts[0] == "OK":
            return base64.b64decode(parts[1] if len(parts) > 1 else "")
        if parts[0] == "ERR" and len(parts) >= 2:
            code = getattr(grpc.StatusCode, parts[1], grpc.StatusCode.UNKNOWN)
            detail = base64.b64decode(parts[2]).decode(errors="replace") if len(parts) > 2 else ""
            raise RelayError(code, detail)
    lost = RelayError(grpc.StatusCode.UNKNOWN, f"the helper pod's gRPC relay gave no answer: {output[-500:]!r}")
    lost.relay_failed = True  # the relay itself failed: no status of the driver's socket came back
    raise lost


class ExecChannel:
    """A ``grpc.Channel`` stand-in for unary calls to ``socket`` (a path inside the helper container) through
    ``exec`` (argv -> output). Usable as a context manager, like a channel. ``seconds``: what the relay
    measured around the last call inside the pod (None before a call or when it could not say)."""

    def __init__(self, exec_: Exec, socket: str) -> None:
        self.exec, self.socket = exec_, socket
        self.seconds: float | None = None

    def __enter__(self) -> ExecChannel:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def close(self) -> None:
        """Nothing to close: every call is its own exec."""

    def unary_unary(self, method: str, request_serializer=None, response_deserializer=None, **_: object):
        """A callable ``(request, timeout=seconds) -> reply`` relaying ``method`` (``/pkg.Service/Method``)."""

        def call(request, timeout: float | None = None, **__: object):
            data = request_serializer(request) if request_serializer else request
            argv = [PYTHON, "-c", RELAY, self.socket, method, str(timeout or 10.0)]
            argv.append(base64.b64encode(data).decode())
            output = self.exec(argv)
            self.seconds = relay_seconds(output)
            reply = parse_reply(output)
            return response_deserializer(reply) if response_deserializer else reply

        return call
