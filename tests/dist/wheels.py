"""Build the three distributions of this repository (plugin, lab, tools) as wheels, the way a release would.

``build()`` runs ``pip wheel --no-deps --no-build-isolation`` (the venv already has setuptools and grpcio-tools,
which build_hooks.py needs) for ``.``, ``lab`` and ``tools`` into ``build/wheels/``, under a file lock so that
pytest-xdist workers never build in the same tree at once; returns ``{distribution: wheel path}``.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "wheels"
SOURCES = {"dra_conformance": ".", "dra_conformance_lab": "./lab", "dra_conformance_tools": "./tools"}
PINS = REPO / "lab" / "conformance_lab" / "versions.toml"


def build() -> dict[str, Path]:
    """Build the wheels afresh; returns ``{distribution name: path}``. Raises AssertionError with pip's output."""
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT.parent / ".wheels.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(OUT, ignore_errors=True)
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps"]
        cmd += ["--no-build-isolation", "-w", str(OUT), *SOURCES.values()]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
        for src in SOURCES.values():  # setuptools leaves its build tree beside each pyproject
            if src != ".":
                shutil.rmtree(REPO / src / "build", ignore_errors=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return {name: next(OUT.glob(f"{name}-*.whl")) for name in SOURCES}


def constraints(dest: Path) -> Path:
    """The lab's ``[python]`` pins as a pip constraints file at ``dest`` (what `make venv` installs)."""
    import tomllib

    pins = tomllib.loads(PINS.read_text())["python"]
    dest.write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
    return dest
