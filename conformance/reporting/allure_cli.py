"""The Allure 3 report CLI (npm ``allure``, no Java): where it is found and how it is installed on demand.

Order: ``$DRA_CONFORMANCE_ALLURE`` (a path to the ``allure`` executable); the copy this package installs into
the user's cache (``<cache>/allure/<version>/node_modules/.bin/allure``, from the ``package.json`` and
``package-lock.json`` shipped beside this module, so the version is the pinned one); ``allure`` on ``PATH``.
When none exists and ``npm`` does, :func:`find` installs the pinned copy (``npm ci``, about 20 s) and says so
on stderr. Source: allure3 ``packages/cli`` README.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ENV_VAR = "DRA_CONFORMANCE_ALLURE"
PINS = Path(__file__).resolve().parent / "allure"
INSTALL_TIMEOUT_S = 600


class AllureMissing(RuntimeError):
    """The Allure CLI is absent and could not be installed; the message says why and how to fix it."""


def pinned_version() -> str:
    """The ``allure`` version the shipped package.json pins (e.g. ``3.18.0``)."""
    return json.loads((PINS / "package.json").read_text())["dependencies"]["allure"]


def cache_dir() -> Path:
    """``$DRA_CONFORMANCE_CACHE`` or ``$XDG_CACHE_HOME/dra-conformance`` (``~/.cache/dra-conformance``)
    ``/allure/<pinned version>``."""
    base = os.environ.get("DRA_CONFORMANCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dra-conformance"
    )
    return Path(base) / "allure" / pinned_version()


def cached() -> Path:
    """Where the cached CLI's executable is (it may not exist)."""
    return cache_dir() / "node_modules" / ".bin" / "allure"


def install(quiet: bool = False) -> Path:
    """``npm ci`` the pinned CLI into :func:`cache_dir` (a no-op when present); returns the executable. The
    install goes to a scratch directory renamed into place last, so an interrupted one is never trusted.
    Raises AllureMissing when npm is absent or fails."""
    target = cached()
    if target.exists():
        return target
    if shutil.which("npm") is None:
        raise AllureMissing(
            f"the Allure 3 CLI is not installed and npm is not on PATH; install Node.js >= 20 with npm, "
            f"or `npm install -g allure@{pinned_version()}`, or set {ENV_VAR}=/path/to/allure"
        )
    final = cache_dir()
    scratch = final.with_name(final.name + f".partial-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(PINS / name, scratch / name)
    if not quiet:
        print(f"installing the Allure {pinned_version()} report CLI into {final} (npm ci) ...", file=sys.stderr)
    proc = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        tail = "\n".join((proc.stderr + proc.stdout).strip().splitlines()[-8:])
        raise AllureMissing(f"`npm ci` of allure {pinned_version()} failed:\n{tail}\ncheck the npm registry")
    shutil.rmtree(final, ignore_errors=True)
    scratch.rename(final)
    return target


def find(install_missing: bool = True) -> Path:
    """The Allure CLI executable (order in the module docstring). Raises AllureMissing naming the fix."""
    if os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
        if not path.exists():
            raise AllureMissing(f"${ENV_VAR}={path} does not exist; fix it or unset it")
        return path
    if cached().exists():
        return cached()
    on_path = shutil.which("allure")
    if on_path:
        return Path(on_path)
    if not install_missing:
        raise AllureMissing(f"the Allure CLI is not installed; run `dra-conformance setup` or set {ENV_VAR}")
    return install()
