"""Image names the plugin needs on any cluster: the offline names our lab serves, the reference driver's image
as its chart names it, and how a chart writes an image versus how containerd stores it.

Source: distribution/reference ``ParseNormalizedNamed`` (a name without a registry is ``docker.io``, a
one-component Docker Hub name is ``library/<name>``, a missing tag is ``latest``); the CRI image service
normalizes a pod's image the same way before looking it up in containerd's ``k8s.io`` namespace.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from conformance.core.config import REGISTRY_FORM

# Names of the helper images the lab's offline catalog serves (conformance_lab.toolchain.images.catalog builds
# them); a cluster whose every node lists one of them gets it instead of the public fallback.
OFFLINE = {"pause": "dra-conformance.local/pause:1", "busybox": "dra-conformance.local/busybox:1"}


class ImageError(RuntimeError):
    """An image could not be built, verified or imported; the message names the input or tool and the fix."""


def reference_driver_chart() -> Path:
    """The reference driver's Helm chart directory (``reference_driver/deploy/chart`` of the installed
    ``reference_driver`` package). Raises ImageError when the package is not installed."""
    spec = importlib.util.find_spec("reference_driver")
    if spec is None or not spec.submodule_search_locations:
        raise ImageError("the reference_driver package is not installed; reinstall dra-conformance")
    return Path(next(iter(spec.submodule_search_locations))) / "deploy" / "chart"


def reference_driver_ref() -> str:
    """The image the reference driver's chart runs, normalized (``docker.io/library/dra-reference-driver:dev``)."""
    return normalize(chart_image(reference_driver_chart()))


def normalize(ref: str) -> str:
    """``dra-reference-driver:dev`` -> ``docker.io/library/dra-reference-driver:dev``; a ref with a registry
    host (a ``.`` or ``:`` in its first component, or ``localhost``) is kept; ``:latest`` is added when no
    tag or digest is given. Raises ImageError on an empty or upper-case name."""
    if not ref or ref != ref.strip() or re.search(r"[A-Z]", ref.split("@")[0].rsplit(":", 1)[0]):
        raise ImageError(f"{ref!r} is not an image reference like registry.example/name:tag")
    first, _, rest = ref.partition("/")
    if not rest:
        ref = f"docker.io/library/{ref}"
    elif not ("." in first or ":" in first or first == "localhost"):
        ref = f"docker.io/{ref}"
    name = ref.split("@")[0]
    if "@" not in ref and ":" not in name.rsplit("/", 1)[-1]:
        ref += ":latest"
    return ref


def _scalar(line: str) -> str:
    value = line.split(":", 1)[1].split(" #")[0].strip()
    return value.strip("\"'")


def chart_image(chart_dir: Path) -> str:
    """The image a Helm chart runs by default: ``values.yaml`` ``image.repository`` and ``image.tag``,
    the tag defaulting to ``Chart.yaml`` ``appVersion`` (the convention of ``helm create`` charts). Reads
    the two files as text (top-level ``image:`` block only). Raises ImageError naming the file and key."""
    values, chart = chart_dir / "values.yaml", chart_dir / "Chart.yaml"
    try:
        lines = values.read_text().splitlines()
        chart_text = chart.read_text()
    except OSError as exc:
        raise ImageError(f"cannot read the chart at {chart_dir}: {exc}; run `make setup` (Go module cache)") from exc
    repo = tag = ""
    in_image = False
    for line in lines:
        if re.match(r"^\S", line):
            in_image = line.startswith("image:")
        elif in_image and re.match(r"^  repository:", line):
            repo = _scalar(line)
        elif in_image and re.match(r"^  tag:", line):
            tag = _scalar(line)
    if not tag:
        m = re.search(r"^appVersion:\s*(\S+)", chart_text, re.M)
        tag = m[1].strip("\"'") if m else ""
    if not repo or not tag:
        raise ImageError(f"{values}: no image.repository/image.tag (or {chart.name} appVersion) found")
    return f"{repo}:{tag}"


def check_registry(registry: str) -> str:
    """``HOST[:PORT][/PREFIX]`` as given to ``--image-registry`` / ``images push --registry``, without a trailing
    slash. Raises ImageError naming the value and the accepted form (no scheme: ``127.0.0.1:5000/dra``)."""
    value = registry.strip().rstrip("/")
    if not REGISTRY_FORM.match(value):
        raise ImageError(
            f"registry {registry!r} is not HOST[:PORT][/PREFIX] (lower case, no http:// scheme), "
            "e.g. 127.0.0.1:5000 or registry.example.com/dra"
        )
    return value


def in_registry(ref: str, registry: str) -> str:
    """Where ``ref`` lives in ``registry`` (``HOST[:PORT][/PREFIX]``): the normalized reference with its own
    registry host replaced, its path kept (``dra-conformance.local/busybox:1`` -> ``REG/busybox:1``,
    ``dra-reference-driver:dev`` -> ``REG/library/dra-reference-driver:dev``). The one mapping both
    ``images push`` and ``--image-registry`` use, so a containerd mirror of the original host (hosts.toml) finds
    the same path. Raises ImageError on a malformed reference or registry."""
    path = normalize(ref).split("/", 1)[1]
    return f"{check_registry(registry)}/{path}"


PIN_FIX = (
    "pin it: `dra-conformance images export` then `images import` on every node (imported with their digests), or "
    "`dra-conformance images push --registry R` and run with --image-registry R once every node has pulled it"
)


def unpinned(refs: list[str]) -> list[str]:
    """The references of ``refs`` (empty ones skipped) that name no digest (``@sha256:``): a tag the registry can
    point at other code. Privileged pods (the helper pods of ``--node-access privileged-pod``) should run only
    pinned images; the run warns about these (:data:`PIN_FIX`)."""
    return [r for r in refs if r and "@sha256:" not in r]
