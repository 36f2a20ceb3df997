"""Image names as a chart writes them and as containerd stores them, and the two chart facts we read.

Source: distribution/reference ``ParseNormalizedNamed`` (a name without a registry is ``docker.io``, a
one-component Docker Hub name is ``library/<name>``, a missing tag is ``latest``); the CRI image service
normalizes a pod's image the same way before looking it up in containerd's ``k8s.io`` namespace.
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance.toolchain.images.oci import ImageError


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
