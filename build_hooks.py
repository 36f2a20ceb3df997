"""setuptools build step of the dra-conformance wheel (pyproject.toml ``[tool.setuptools.cmdclass]``).

Before the packages are collected it generates the gRPC stubs (``conformance/protos.py``; they are gitignored),
and after, it copies the suites (``suites/`` -> ``conformance/suites/``) and the shipped driver profiles
(``fixtures/drivers/*.yaml`` -> ``conformance/profiles/``) into the build tree as package data, so an installed
plugin runs ``pytest --pyargs conformance.suites`` from any directory (conformance/shipped.py finds them).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _generate_stubs() -> None:
    spec = importlib.util.spec_from_file_location("_dra_protos", ROOT / "conformance" / "protos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate_all()


class BuildPy(build_py):
    """build_py that ships the gRPC stubs, the suites and the driver profiles inside the ``conformance`` package."""

    def run(self) -> None:
        _generate_stubs()
        super().run()
        target = Path(self.build_lib) / "conformance"
        suites = target / "suites"
        shutil.rmtree(suites, ignore_errors=True)
        shutil.copytree(ROOT / "suites", suites, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        profiles = target / "profiles"
        shutil.rmtree(profiles, ignore_errors=True)
        profiles.mkdir(parents=True)
        for path in sorted((ROOT / "fixtures" / "drivers").glob("*.yaml")):
            shutil.copy2(path, profiles / path.name)
