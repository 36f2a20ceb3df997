"""Every image a run needs, where it comes from, and archives of them for an air-gapped cluster.

=================== ===================================== ==============================================
name                used by                               built from
=================== ===================================== ==============================================
pause               every pod's sandbox (local cluster)   our Go program (pause/main.go), host Go
busybox             probe pods and privileged helper pods Debian busybox-static of this host
dra-example-driver  the dra-example-driver chart's pods   its Go module (make setup) + chart facts
dra-example-        upgrade lane: dra-example-driver's    the previous release's Go module (make setup)
driver-previous     upgrade_from                          + its chart's facts
dra-example-        make example-driver-history (older    that release's Go module + its chart's facts
driver-vX.Y.Z       releases; optional)
dra-driver-cpu      dra-driver-cpu chart's pods (optional)  its Go module + its chart's facts
reference-driver    the reference driver chart's pods     Debian python3 .debs, PyPI wheels, our source
suite (optional)    the suite as a pod (ci/in-cluster/)   Debian python3 + nodejs .debs, wheels, our tools
=================== ===================================== ==============================================

An optional image is built, exported or imported only when named (``images build suite``); ``list`` shows it.

An export directory holds ``<name>.oci.tar`` per image and ``images.json`` (name, ref, manifest digest,
file sha256, size), so ``import --from DIR`` on another machine can check what it loads.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from conformance.images import OFFLINE
from conformance_lab.toolchain.images import base, cpu_driver, example_driver, reference_image, store, suite_image
from conformance_lab.toolchain.images.oci import ImageError, sha256_file, verify_archive

DEFAULT_IMAGES = OFFLINE  # conformance.images names them for the plugin
INDEX = "images.json"


@dataclasses.dataclass(frozen=True)
class ImageSpec:
    """One image: ``name`` (what the CLI takes), ``used_by``/``source`` (human text), ``ref()`` the name
    containerd stores it under, ``build()`` the verified cached archive (built on a miss), ``cached()`` that
    archive or None without building."""

    name: str
    used_by: str
    source: str
    ref: Callable[[], str]
    build: Callable[[], Path]
    cached: Callable[[], Path | None]
    optional: bool = False


def specs(local_images: dict[str, str] | None = None) -> list[ImageSpec]:
    """The catalog, in load order; ``local_images`` overrides the pause/busybox names (a cluster's own)."""
    names = {**DEFAULT_IMAGES, **(local_images or {})}
    pause, busybox = names["pause"], names["busybox"]
    return [
        ImageSpec(
            "pause",
            "every pod's sandbox on the local cluster",
            "our static Go program (lab/conformance_lab/toolchain/images/pause), built with the host's Go",
            lambda: pause,
            lambda: base.pause_archive(pause),
            lambda: store.lookup("pause", base.pause_key(pause)),
        ),
        ImageSpec(
            "busybox",
            "probe pods (device visibility) and privileged helper pods (node access)",
            "Debian busybox-static of this host, one link per applet",
            lambda: busybox,
            lambda: base.busybox_archive(busybox),
            lambda: store.lookup("busybox", base.busybox_key(busybox)),
        ),
        ImageSpec(
            "dra-example-driver",
            "dra-example-driver profile, deployed from its own Helm chart",
            "binaries built from sigs.k8s.io/dra-example-driver (make setup); name from its chart",
            example_driver.ref,
            example_driver.archive,
            lambda: store.lookup(example_driver.TOOL, example_driver.key()),
        ),
        ImageSpec(
            example_driver.PREVIOUS,
            "dra-example-driver profile's upgrade_from (the upgrade lane's previous version)",
            "binaries built from sigs.k8s.io/dra-example-driver at versions.toml [go.dra-example-driver-previous]",
            lambda: example_driver.ref(example_driver.PREVIOUS),
            lambda: example_driver.archive(example_driver.PREVIOUS),
            lambda: store.lookup(example_driver.PREVIOUS, example_driver.key(example_driver.PREVIOUS)),
        ),
        *(_history_spec(tool) for tool in example_driver.history_tools()),
        ImageSpec(
            cpu_driver.TOOL,
            "dra-driver-cpu profile, deployed from its own Helm chart (optional)",
            "dracpu built from github.com/kubernetes-sigs/dra-driver-cpu (versions.toml [go.dra-driver-cpu])",
            cpu_driver.ref,
            cpu_driver.archive,
            lambda: store.lookup(cpu_driver.TOOL, cpu_driver.key()),
            optional=True,
        ),
        ImageSpec(
            "reference-driver",
            "reference profile, deployed from reference_driver/deploy/chart",
            "Debian 12 python3 .debs + PyPI wheels (versions.toml [images]) + reference_driver/",
            reference_image.ref,
            reference_image.archive,
            reference_image.cached,
        ),
        ImageSpec(
            "suite",
            "the suite itself as a pod (in-cluster mode, ci/in-cluster/) or with Docker",
            "Debian 12 python3 + nodejs .debs, PyPI wheels (pyproject), kubectl/helm/kind, Allure CLI, the project",
            suite_image.ref,
            suite_image.archive,
            suite_image.cached,
            optional=True,
        ),
    ]


def _history_spec(tool: str) -> ImageSpec:
    """An older dra-example-driver release's image (optional: built only when named, by its profile in
    `make example-driver-history`), named as that release's own chart runs it."""
    return ImageSpec(
        tool,
        "make example-driver-history (that release's own chart)",
        f'binaries built from sigs.k8s.io/dra-example-driver at versions.toml [go."{tool}"]',
        lambda: example_driver.ref(tool),
        lambda: example_driver.archive(tool),
        lambda: store.lookup(tool, example_driver.key(tool)),
        optional=True,
    )


def select(
    names: list[str], local_images: dict[str, str] | None = None, include_optional: bool = False
) -> list[ImageSpec]:
    """The specs named (all but the optional ones when ``names`` is empty, unless ``include_optional``), in
    catalog order. Raises ImageError listing the known names on an unknown one."""
    catalog = specs(local_images)
    known = [s.name for s in catalog]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ImageError(f"unknown image {unknown}; known: {', '.join(known)}")
    return [s for s in catalog if s.name in names or (not names and (include_optional or not s.optional))]


def export(chosen: list[ImageSpec], dest: Path) -> list[dict]:
    """Copy each image's archive (built if missing) to ``dest/<name>.oci.tar`` (temporary name, renamed)
    and write ``dest/images.json``; returns its records."""
    dest.mkdir(parents=True, exist_ok=True)
    records = []
    for spec in chosen:
        archive = spec.build()
        info = verify_archive(archive)
        out = dest / f"{spec.name}.oci.tar"
        tmp = dest / f".{out.name}.partial-{os.getpid()}"
        try:
            shutil.copyfile(archive, tmp)
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        records.append(
            {"name": spec.name, "ref": info.ref, "digest": info.digest, "file": out.name}
            | {"sha256": sha256_file(out), "size": info.size}
        )
    old = _read_index(dest) if (dest / INDEX).is_file() else []
    merged = {r["name"]: r for r in [*old, *records]}
    tmp = dest / f".{INDEX}.partial-{os.getpid()}"
    tmp.write_text(json.dumps(sorted(merged.values(), key=lambda r: r["name"]), indent=2) + "\n")
    os.replace(tmp, dest / INDEX)
    return records


def _read_index(src: Path) -> list[dict]:
    try:
        records = json.loads((src / INDEX).read_text())
        assert isinstance(records, list) and all({"name", "file", "sha256", "ref"} <= set(r) for r in records)
    except (OSError, ValueError, AssertionError) as exc:
        raise ImageError(
            f"{src / INDEX} is unreadable or malformed ({exc}); re-run `dra-conformance images export`"
        ) from exc
    return records


def load_dir(src: Path, names: list[str] = ()) -> list[tuple[str, str, Path]]:
    """``(name, ref, archive)`` of each image in an export directory (only ``names`` when given), each
    checked against ``images.json`` (file sha256, image name) and verified. Raises ImageError naming the
    file and the fix."""
    if not (src / INDEX).is_file():
        raise ImageError(f"{src} has no {INDEX}; point --from at a directory written by `images export --to`")
    records = _read_index(src)
    missing = [n for n in names if n not in {r["name"] for r in records}]
    if missing:
        raise ImageError(f"{src / INDEX} lists no image {missing}; it has {sorted(r['name'] for r in records)}")
    loaded = []
    for r in records:
        if names and r["name"] not in names:
            continue
        path = src / r["file"]
        if not path.is_file() or sha256_file(path) != r["sha256"]:
            raise ImageError(f"{path} is missing or does not match the sha256 in {INDEX}; export it again")
        info = verify_archive(path)
        if info.ref != r["ref"]:
            raise ImageError(f"{path} names {info.ref}, {INDEX} says {r['ref']}; export it again")
        loaded.append((r["name"], info.ref, path))
    return loaded
