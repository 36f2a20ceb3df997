"""The reference driver image: Debian 12's Python, PyPI wheels of the driver's dependencies and the
``reference_driver`` package, in three layers, named and started as ``reference_driver/deploy/chart`` and
``reference_driver/deploy/Dockerfile`` say (``ENTRYPOINT ["python", "-m", "reference_driver"]`` in ``/app``).

Layers, bottom first (each cached on its own, so a driver source change rebuilds only the top one):
1. runtime: the Depends closure of versions.toml ``[images] reference-driver-debian`` (debian.py),
   keyed by those names and the apt lists' state;
2. python deps: ``pip install --target /usr/local/lib/python3.X/dist-packages`` of manylinux/pure wheels
   for CPython 3.X at the ``[python]`` pins (protobuf at the venv's version, which generated our stubs);
3. app: ``/app/reference_driver`` with its generated gRPC stubs.

Cold build (downloads .debs and wheels): about a minute on 2 cores; warm: seconds (see README).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

from conformance import images as refs
from conformance_lab.toolchain import versions
from conformance_lab.toolchain.images import debian, store
from conformance_lab.toolchain.images.base import account_files
from conformance_lab.toolchain.images.oci import ImageConfig, ImageError, tree_layer

NAME = "reference-driver"
CHART = refs.reference_driver_chart()
SOURCE = CHART.parent.parent
APT_LISTS = Path("/var/lib/apt/lists")
ENTRYPOINT = ("python", "-m", "reference_driver")  # reference_driver/deploy/Dockerfile
# Dropped from the wheels: console scripts (they name the host's interpreter) and kubernetes' asyncio client
# (41 MB; the driver uses the synchronous client and nothing outside kubernetes/aio imports it).
PRUNE = ("bin", "kubernetes/aio")
# Wheel platform tags a Debian 12 x86_64 CPython accepts (glibc 2.36; PEP 600 names, then PEP 599's alias).
PLATFORMS = tuple(f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)) + ("manylinux2014_x86_64",)


def _pins() -> dict:
    return versions.load().images


def ref() -> str:
    """The image the chart runs, normalized (``docker.io/library/dra-reference-driver:dev``)."""
    return refs.reference_driver_ref()


def python_minor() -> str:
    """``3.11`` from the Debian package names (``libpython3.11-stdlib``). Raises ImageError when none names it."""
    for name in _pins().get("reference-driver-debian", []):
        if m := re.search(r"python(3\.\d+)", name):
            return m[1]
    raise ImageError("versions.toml [images] reference-driver-debian names no libpython3.X package")


def requirements() -> list[str]:
    """``name==version`` of every PyPI package the image installs. Raises ImageError naming a missing pin."""
    pins = {k.lower(): v for k, v in versions.load().python.items()}
    reqs = []
    for name in _pins().get("reference-driver-pypi", []):
        version = pins.get(name.lower())
        if version is None:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                raise ImageError(
                    f"{name} is neither pinned in versions.toml [python] nor installed in the venv"
                ) from None
        reqs.append(f"{name}=={version}")
    reqs += [f"{k}=={v}" for k, v in sorted(_pins().get("reference-driver-extra", {}).items())]
    return reqs


def _apt_state() -> list:
    return sorted((p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in APT_LISTS.glob("*Packages*"))


def debian_key(name: str, roots: list[str]) -> str:
    """The cache key of a Debian layer: its roots, what is left out and the apt lists' state."""
    return store.cache_key(name, roots, sorted(debian.NOT_IN_IMAGES), _apt_state())


def debian_layer(name: str, roots: list[str]) -> Path:
    """A cached layer (``name``, e.g. ``runtime``): the Depends closure of ``roots`` unpacked from .debs, with
    ``ld.so.cache``, ``/usr/bin/python`` and accounts (docs, manuals and byte code left out)."""

    def build(tmp: Path) -> None:
        root = store.work_dir(name)
        try:
            debian.unpack(debian.download(debian.resolve(roots)), root)
            for path, _, data, mode in account_files():
                (root / path).write_bytes(data)
                os.chmod(root / path, mode)
            debian.finish_rootfs(root)
            tree_layer(tmp, root, exclude=("__pycache__", "doc", "man", "info", "lintian"))
        finally:
            store.drop(root)

    return store.cached_layer(name, debian_key(name, roots), build)


def runtime_layer() -> Path:
    """Layer 1 (cached): the Debian Python runtime with ``ld.so.cache``, ``/usr/bin/python`` and accounts."""
    return debian_layer("runtime", list(_pins().get("reference-driver-debian", [])))


def wheels_key(name: str, minor: str, reqs: list[str]) -> str:
    """The cache key of a wheels layer: Python minor, requirements and what is pruned."""
    return store.cache_key(name, minor, reqs, PRUNE)


def wheels_layer(name: str, minor: str, reqs: list[str]) -> Path:
    """A cached layer (``name``, e.g. ``pydeps``): ``reqs`` and their dependencies as manylinux/pure wheels for
    CPython ``minor`` on x86_64 glibc 2.36 (Debian 12) under ``/usr/local/lib/python3.X/dist-packages``.
    Raises ImageError with pip's output when a wheel cannot be had."""

    def build(tmp: Path) -> None:
        root = store.work_dir(name)
        target = root / f"usr/local/lib/python{minor}/dist-packages"
        argv = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
                "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
                "--python-version", minor, "--abi", "cp" + minor.replace(".", ""),
                *[arg for tag in PLATFORMS for arg in ("--platform", tag)], *reqs]  # fmt: skip
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise ImageError(f"pip could not install {reqs} as wheels: {proc.stderr.strip()[-800:]}")
            for stray in PRUNE:
                store.drop(target / stray)
            tree_layer(tmp, root)
        finally:
            store.drop(root)

    return store.cached_layer(name, wheels_key(name, minor, reqs), build)


def deps_layer() -> Path:
    """Layer 2 (cached): the wheels of :func:`requirements` (see :func:`wheels_layer`)."""
    return wheels_layer("pydeps", python_minor(), requirements())


def app_layer(out: Path) -> Path:
    """Layer 3: ``/app/reference_driver`` (gRPC stubs generated first), written to ``out``."""
    from conformance import protos  # noqa: PLC0415 - grpc_tools lives in the venv

    protos.generate_all()
    return tree_layer(out, SOURCE, prefix="app/reference_driver", exclude=("__pycache__", "*.pyc"))


def image_config() -> ImageConfig:
    """Entrypoint, working directory and environment of the Dockerfile."""
    return ImageConfig(
        entrypoint=ENTRYPOINT,
        env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONUNBUFFERED=1"),
        workdir="/app",
        labels=(("org.opencontainers.image.title", "dra-conformance reference DRA driver"),),
    )


def _keys() -> tuple[str, str]:
    roots = list(_pins().get("reference-driver-debian", []))
    return debian_key("runtime", roots), wheels_key("pydeps", python_minor(), requirements())


def _archive(layers: list[Path], build: bool) -> Path | None:
    return store.app_archive(NAME, ref(), layers, app_layer, image_config(), build=build, work="app")


def archive() -> Path:
    """The cached, verified archive; builds the missing layers. Raises ImageError (apt, pip, protoc)."""
    return _archive([runtime_layer(), deps_layer()], build=True)


def cached() -> Path | None:
    """The archive when it and its layers are cached (no apt or pip run; the app layer is re-made to
    compare, about a second); None otherwise."""
    runtime, deps = _keys()
    layers = [store.find_layer("runtime", runtime), store.find_layer("pydeps", deps)]
    return None if None in layers else _archive(layers, build=False)
