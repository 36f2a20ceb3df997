"""Host-level setup steps: Debian packages, the Allure 3 CLI from npm, gRPC stubs from our .proto files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conformance.reporting import allure_cli
from conformance_lab.toolchain.steps import SetupError


def _missing_debs(packages: tuple[str, ...]) -> list[str]:
    missing = []
    for pkg in packages:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in proc.stdout:
            missing.append(pkg)
    return missing


def install_debian(packages: tuple[str, ...]) -> str:
    """apt-get install the packages that are not installed yet. Raises SetupError naming the fix."""
    if shutil.which("dpkg-query") is None:
        raise SetupError(
            "debian packages",
            "this is not a Debian-based machine (no dpkg-query)",
            f"install by hand: {' '.join(packages)}",
        )
    missing = _missing_debs(packages)
    if not missing:
        return f"all {len(packages)} present"
    if os.geteuid() != 0:
        raise SetupError(
            "debian packages",
            f"missing {' '.join(missing)} and not running as root",
            f"run `sudo apt-get install -y {' '.join(missing)}` or run make setup as root",
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr + proc.stdout).strip().splitlines()[-8:])
            raise SetupError(
                "debian packages",
                f"`{' '.join(cmd[:3])}` failed:\n{tail}",
                "check that the Debian archive is reachable (apt sources) and re-run `make setup`",
            )
    return f"installed {' '.join(missing)}"


def install_allure() -> str:
    """Install the Allure 3 CLI the plugin pins (conformance.reporting.allure_cli) into the user's cache.
    Raises SetupError naming the fix."""
    try:
        if allure_cli.cached().exists():
            return f"allure {allure_cli.pinned_version()} present"
        path = allure_cli.install(quiet=True)
    except allure_cli.AllureMissing as exc:
        raise SetupError("allure CLI", str(exc), "install Node.js >= 20 with npm and re-run `make setup`") from None
    return f"installed allure {allure_cli.pinned_version()} ({path})"


def generate_protos() -> str:
    """Generate Python gRPC stubs for every .proto under reference_driver/ and conformance/ (grpcio-tools)."""
    from conformance import protos  # noqa: PLC0415 - needs grpcio-tools, which exists only inside the venv

    count = protos.generate_all()
    return f"generated stubs for {count} .proto files"


def python_ok() -> str:
    """Confirm we run inside the project's virtual environment."""
    if sys.prefix == sys.base_prefix:
        raise SetupError(
            "python environment",
            "not running inside the virtual environment",
            "run `make setup` (it creates .venv) instead of calling this module directly",
        )
    return f"{sys.version.split()[0]} in {sys.prefix}"
