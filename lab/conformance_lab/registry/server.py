"""Start and stop the lab's loopback registries: the CNCF distribution registry (``cmd/registry`` of
``github.com/distribution/distribution/v3``, pinned in versions.toml ``[go.registry]``) and a classic Helm chart
repository served by a Python ``http.server`` thread.

Both bind 127.0.0.1 only, on a free port, keep their storage in a fresh temporary directory and remove it when
stopped, so nothing outlives the ``with`` block (process, port, storage). Source: distribution's configuration
reference (``storage.filesystem.rootdirectory``, ``http.addr``) and its API root ``GET /v2/`` (OCI
distribution-spec "end-1": 200 when the registry implements the spec); Helm's chart repository guide
(``index.yaml`` plus the chart archives at the URLs it lists).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from conformance_lab.toolchain import firstuse

READY_TIMEOUT_S = 30.0  # cold start of the registry binary on a busy 2-core machine is well under 2 s
_CONFIG = """\
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


class RegistryError(RuntimeError):
    """A loopback registry could not start or answer; the message names the binary or URL and the fix."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def registry_binary() -> Path:
    """The cached ``registry`` binary at its pinned version (built on first use); raises CacheMiss naming
    `dra-conformance setup --all` (`make setup-all` in a checkout) when that fails."""
    return firstuse.tool_binary("registry")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Registry:
    """A running distribution registry: ``host`` is ``127.0.0.1:<port>`` (what image references and
    ``--registry`` take), ``url`` its ``http://`` base, ``root`` its storage directory, ``log`` its output."""

    def __init__(self, proc: subprocess.Popen, host: str, root: Path, log: Path) -> None:
        self.proc, self.host, self.root, self.log = proc, host, root, log
        self.url = f"http://{host}"

    def stop(self) -> None:
        """Terminate the registry (SIGTERM, then SIGKILL after 10 s) and remove its storage directory."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root.parent, ignore_errors=True)


def start_registry(binary: Path | None = None) -> Registry:
    """Start the registry on a free loopback port with fresh storage; return it once ``GET /v2/`` answers 200.

    Raises RegistryError with the tail of its log when it exits or does not answer within READY_TIMEOUT_S;
    CacheMiss when the binary is not built (`make setup`)."""
    binary = binary or registry_binary()
    workdir = Path(tempfile.mkdtemp(prefix="dra-conformance-registry-"))
    root, log = workdir / "storage", workdir / "registry.log"
    root.mkdir()
    port = free_port()
    (workdir / "config.yml").write_text(_CONFIG.format(root=root, port=port))
    env = {"PATH": "/usr/bin:/bin", "OTEL_TRACES_EXPORTER": "none", "OTEL_SDK_DISABLED": "true"}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(binary), "serve", str(workdir / "config.yml")], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    reg = Registry(proc, f"127.0.0.1:{port}", root, log)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _answers(f"{reg.url}/v2/"):
            return reg
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:]
    reg.stop()
    raise RegistryError(
        f"{binary} did not answer on {reg.url}/v2/ within {READY_TIMEOUT_S:.0f} s (exit code {proc.poll()}); "
        f"its log:\n{tail}\nfix: re-run `dra-conformance setup --all` (`make setup-all` in a checkout; builds the "
        "registry) or free the port"
    )


@contextlib.contextmanager
def running_registry(binary: Path | None = None) -> Iterator[Registry]:
    """``with running_registry() as reg:`` a registry for the block, stopped and its storage removed after."""
    reg = start_registry(binary)
    try:
        yield reg
    finally:
        reg.stop()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


@contextlib.contextmanager
def chart_repository(directory: Path) -> Iterator[str]:
    """Serve ``directory`` (an ``index.yaml`` and chart archives, from ``helm repo index``) over HTTP on a
    free loopback port for the block; yields its URL ``http://127.0.0.1:<port>``. The server thread is shut
    down and its socket closed after the block."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="chart-repository", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
