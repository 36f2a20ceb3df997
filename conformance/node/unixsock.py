"""gRPC targets for unix sockets whose path is longer than ``sockaddr_un.sun_path`` (108 bytes with the NUL;
connect() then fails with EINVAL): e.g. a chart-deployed plugin's ``<driver>-<pod uid>-reg.sock`` under a
local node's kubelet dir. The socket's directory is opened and the socket reached as
``/proc/self/fd/<dir fd>/<name>`` while the channel is used. Source: unix(7) (sun_path size)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

MAX_PATH = 100  # shorter paths are dialed as they are


@contextlib.contextmanager
def target(socket: Path | str) -> Iterator[str]:
    """A ``unix://`` gRPC target for ``socket``, valid inside the with-block. Raises OSError when a long
    path's directory cannot be opened."""
    path = str(socket)
    if len(path) <= MAX_PATH:
        yield f"unix://{path}"
        return
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"unix:///proc/self/fd/{fd}/{os.path.basename(path)}"
    finally:
        os.close(fd)


@contextlib.contextmanager
def channel(socket: Path | str, options: tuple = ()) -> Iterator[grpc.Channel]:
    """An insecure gRPC channel to the unix socket ``socket`` (a path this host can dial), closed after the
    with-block: how the node clients dial when the node's files are this host's (the default ``dial``)."""
    with target(socket) as dial, grpc.insecure_channel(dial, options=list(options)) as chan:
        yield chan


Dial = Callable[..., contextlib.AbstractContextManager]  # (socket, options=()) -> a channel context, as :func:`channel`
