"""The suite image: dra-conformance itself, to run as a pod (in-cluster mode, ci/in-cluster/) or with Docker
against a kubeconfig. Built offline like the reference driver image (reference_image.py); the repository's
``Dockerfile`` is the same image for users who build with Docker from the internet.

Layers, bottom first (each cached on its own):
1. runtime: the Depends closure of versions.toml ``[images] suite-debian`` (Python 3.11, Debian's nodejs for
   the Allure 3 CLI, dash/coreutils/tar for ``kubectl cp`` and the pod's command);
2. python deps: wheels of pyproject ``[project] dependencies`` (not matplotlib) at the ``[python]`` pins
   (protobuf at the venv's version, which generated our stubs);
3. tools: kubectl of the default Kubernetes release, helm and kind from our cache, laid out as the cache
   (``/opt/dra-conformance/cache``, found through ``DRA_CONFORMANCE_CACHE``) with links in
   ``/usr/local/bin``; the Allure CLI's ``node_modules`` (conformance.reporting.allure_cli) in ``/opt/allure``;
4. app: ``/app`` = conformance/, suites/, fixtures/, reference_driver/ (stubs generated), pyproject and
   versions.toml, a ``dra_conformance`` dist-info so pytest finds our plugins through their entry points,
   and ``/usr/local/bin/dra-conformance``.

Entrypoint ``dra-conformance run``; the default arguments run the ``core`` profile against an existing
cluster (a mounted kubeconfig or, in a pod, its service account: conformance/k8s/incluster.py).
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import tomllib
from pathlib import Path

from conformance.reporting import allure_cli
from conformance_lab.toolchain import cache, versions
from conformance_lab.toolchain.images import reference_image, store
from conformance_lab.toolchain.images.oci import ImageConfig, ImageError, sha256_file, tree_layer

NAME = "suite"
REF = "dra-conformance.local/suite:dev"
APP = ("conformance", "suites", "fixtures", "reference_driver")
APP_FILES = ("pyproject.toml", "README.md")
CACHE_IN_IMAGE = "/opt/dra-conformance/cache"
ALLURE_IN_IMAGE = "/opt/allure/node_modules"
ENTRYPOINT = ("dra-conformance", "run")
CMD = ("--cluster", "existing", "--profile", "core")
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONPATH=/app",
    "PYTHONUNBUFFERED=1",
    "HOME=/root",
    f"DRA_CONFORMANCE_CACHE={CACHE_IN_IMAGE}",
    f"DRA_CONFORMANCE_ALLURE={ALLURE_IN_IMAGE}/.bin/allure",
)
# pyproject dependencies left out: matplotlib (and numpy, pillow, fonttools: 120 MB) only draws the benchmark's
# plots, and `dra-conformance bench` needs a local cluster with kwok nodes, which a pod does not start.
LEFT_OUT: tuple[str, ...] = ()  # the plugin needs every one of its dependencies
SCRIPT = "#!/usr/bin/python3\nimport sys\n\nfrom conformance.cli import main\n\nsys.exit(main())\n"


def ref() -> str:
    """The image name (``dra-conformance.local/suite:dev``; the Dockerfile's README tag is the same)."""
    return REF


def requirements() -> list[str]:
    """``name==version`` of pyproject's ``[project] dependencies`` but :data:`LEFT_OUT` (pins from
    versions.toml ``[python]``, else the venv's version). Raises ImageError naming a dependency that is neither."""
    pyproject = tomllib.loads((versions.REPO_ROOT / "pyproject.toml").read_text())
    pins = {k.lower(): v for k, v in versions.load().python.items()}
    reqs = []
    for spec in pyproject["project"]["dependencies"]:
        name = spec.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip()
        if name in LEFT_OUT:
            continue
        version = pins.get(name.lower())
        if version is None:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                raise ImageError(f"{name} is neither pinned in versions.toml [python] nor installed") from None
        reqs.append(f"{name}=={version}")
    return reqs


def _roots() -> list[str]:
    roots = list(versions.load().images.get("suite-debian", []))
    if not roots:
        raise ImageError("versions.toml [images] suite-debian is empty; it lists the suite image's Debian packages")
    return roots


def allure_modules() -> Path:
    """The Allure CLI's ``node_modules`` (conformance.reporting.allure_cli.find, never installing), checked
    against the pinned version. Raises ImageError naming the fix (``make setup``)."""
    try:
        modules = allure_cli.find(install_missing=False).parent.parent
    except allure_cli.AllureMissing as exc:
        raise ImageError(f"{exc}: run `make setup`") from None
    pkg = modules / "allure" / "package.json"
    want = allure_cli.pinned_version()
    try:
        have = json.loads(pkg.read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise ImageError(f"no Allure CLI at {modules}: run `make setup`") from None
    if have != want:
        raise ImageError(f"{pkg} is allure {have}, conformance/reporting/allure pins {want}: run `make setup`")
    return modules


def tool_binaries() -> dict[str, Path]:
    """Cache path (relative to the cache root) -> binary: kubectl of the default release, helm and kind.
    Raises CacheMiss naming ``make setup`` when one is not built."""
    tag = versions.load().k8s_tag()
    found = {f"k8s/{tag}/bin/kubectl": cache.k8s_binary("kubectl", tag)}
    for tool in ("helm", "kind"):
        path = cache.tool_binary(tool)
        found[str(path.relative_to(cache.root()))] = path
    return found


def _tools_key() -> str:
    bins = {rel: sha256_file(path) for rel, path in tool_binaries().items()}
    lock = allure_modules().parent / "package-lock.json"
    return store.cache_key(NAME + "-tools", bins, sha256_file(lock) if lock.is_file() else "", ALLURE_IN_IMAGE)


def tools_layer() -> Path:
    """Layer 3 (cached): kubectl, helm, kind in the image's cache layout (with their MANIFEST.json) and
    ``/usr/local/bin`` links; the Allure CLI in ``/opt/allure``."""

    def build(tmp: Path) -> None:
        root = store.work_dir("suite-tools")
        try:
            bindir = root / "usr/local/bin"
            bindir.mkdir(parents=True)
            for rel, path in tool_binaries().items():
                dest = root / CACHE_IN_IMAGE.lstrip("/") / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
                shutil.copy2(path.parent.parent / cache.MANIFEST, dest.parent.parent / cache.MANIFEST)
                (bindir / path.name).symlink_to(f"{CACHE_IN_IMAGE}/{rel}")
            shutil.copytree(allure_modules(), root / ALLURE_IN_IMAGE.lstrip("/"), symlinks=True)
            tree_layer(tmp, root, exclude=())
        finally:
            store.drop(root)

    return store.cached_layer(NAME + "-tools", _tools_key(), build)


def app_layer(out: Path) -> Path:
    """Layer 4: ``/app`` (the project, gRPC stubs generated first), its dist-info and the console script,
    written to ``out``."""
    from conformance import protos  # noqa: PLC0415 - grpc_tools lives in the venv

    protos.generate_all()
    pyproject = tomllib.loads((versions.REPO_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    root = store.work_dir("suite-app")
    try:
        app = root / "app"
        for name in APP:
            shutil.copytree(
                versions.REPO_ROOT / name, app / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        for name in APP_FILES:
            shutil.copy2(versions.REPO_ROOT / name, app / name)
        dist = app / f"dra_conformance-{project['version']}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
        )
        groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
        text = "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in e.items()) + "\n" for g, e in groups.items())
        (dist / "entry_points.txt").write_text(text)
        script = root / "usr/local/bin/dra-conformance"
        script.parent.mkdir(parents=True)
        script.write_text(SCRIPT)
        script.chmod(0o755)
        return tree_layer(out, root, exclude=("__pycache__", "*.pyc"))
    finally:
        store.drop(root)


def image_config() -> ImageConfig:
    """Entrypoint ``dra-conformance run`` with the core profile on an existing cluster by default."""
    return ImageConfig(
        entrypoint=ENTRYPOINT,
        cmd=CMD,
        env=ENV,
        workdir="/app",
        labels=(("org.opencontainers.image.title", "dra-conformance: DRA driver conformance suite"),),
    )


def _keys() -> tuple[str, str]:
    minor = reference_image.python_minor()
    return (
        reference_image.debian_key(NAME + "-runtime", _roots()),
        reference_image.wheels_key(NAME + "-pydeps", minor, requirements()),
    )


def _archive(layers: list[Path], build: bool) -> Path | None:
    return store.app_archive(NAME, ref(), layers, app_layer, image_config(), build=build, work="suite")


def archive() -> Path:
    """The cached, verified archive; builds the missing layers. Raises ImageError (apt, pip, protoc, the
    Allure CLI) or CacheMiss (kubectl, helm, kind not built: ``make setup``)."""
    minor = reference_image.python_minor()
    layers = [
        reference_image.debian_layer(NAME + "-runtime", _roots()),
        reference_image.wheels_layer(NAME + "-pydeps", minor, requirements()),
        tools_layer(),
    ]
    return _archive(layers, build=True)


def cached() -> Path | None:
    """The archive when it and its layers are cached (no apt or pip run); None otherwise."""
    runtime, deps = _keys()
    try:
        tools_key = _tools_key()
    except (ImageError, cache.CacheMiss):
        return None
    layers = [
        store.find_layer(NAME + "-runtime", runtime),
        store.find_layer(NAME + "-pydeps", deps),
        store.find_layer(NAME + "-tools", tools_key),
    ]
    return None if None in layers else _archive(layers, build=False)
