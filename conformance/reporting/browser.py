"""Looking at a generated report the way a user does: served over http://127.0.0.1, opened in headless
Chromium (Debian package ``chromium``). Allure 3 reports load their data with fetch(), so file:// does not
work. Used by the reporting tests and by ``dra-conformance report --screenshot``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
BROWSER_TIMEOUT_S = 90
VIRTUAL_TIME_BUDGET_MS = 15000


class BrowserError(RuntimeError):
    """Chromium is missing or failed; the message names the fix."""


def chromium() -> str:
    """Path of a Chromium binary; raises :class:`BrowserError` (install the Debian package ``chromium``)."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError("chromium not found on PATH: `apt-get install chromium` (versions.toml [debian])")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D102 - silence per-request logging
        pass


@contextlib.contextmanager
def serve(directory: str | pathlib.Path):
    """Serve ``directory`` on http://127.0.0.1:<free port>/ for the ``with`` block; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="report-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _run(args: list[str]) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="dra-report-chromium-") as profile:
        cmd = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
            *args,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=BROWSER_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"chromium ran over {BROWSER_TIMEOUT_S}s on {args[-1]}") from exc
    if proc.returncode != 0:
        raise BrowserError(
            f"chromium exited {proc.returncode} on {args[-1]}: {proc.stderr.decode(errors='replace')[-1500:]}"
        )
    return proc


def dump_dom(url: str) -> str:
    """The DOM of ``url`` after its scripts ran (``--dump-dom``), as HTML text."""
    return _run(["--dump-dom", url]).stdout.decode("utf-8", errors="replace")


def visible_text(dom: str) -> str:
    """The text of a DOM's body without scripts and styles, one text node per line."""
    body = dom[dom.find("<body") :] if "<body" in dom else dom
    body = re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S | re.I)
    text = re.sub(r"<[^>]+>", "\n", body)
    return re.sub(r"\n\s*\n+", "\n", text).replace("&nbsp;", " ")


def screenshot(url: str, path: str | pathlib.Path, size: str = "1440,1000") -> pathlib.Path:
    """Save a PNG screenshot of ``url`` to ``path``; returns the path (raises :class:`BrowserError` when
    no PNG was written)."""
    path = pathlib.Path(path).resolve()
    _run([f"--screenshot={path}", f"--window-size={size}", "--hide-scrollbars", url])
    if not path.is_file() or path.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise BrowserError(f"chromium wrote no PNG at {path} for {url}")
    return path
