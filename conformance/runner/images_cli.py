"""``dra-conformance images list [--driver P] [-o json]``: every image a run may pull, before it runs (for a
registry mirror, an allow-list or an air-gapped cluster).

Rows: the probe image (profile ``visibility.image``), the test and helper pods' busybox (the offline
``dra-conformance.local/busybox:1`` when every node has it, else ``busybox:1.36`` from the nodes' registry:
conformance.clusters.existing), the helper pods' gRPC relay (the reference-driver image, used only when every
node has it), the local cluster's pause image, and the driver's own images per deploy mode: the images its
profile names (``deploy.images``: imported into the nodes from the lab's cache, not pulled) and the image of its
chart when the chart is on disk (``values.yaml`` image.repository:tag, conformance.images.chart_image; a remote
chart's images are named by ``helm template``).

The ``images`` command is shared: this module owns ``images list``; the lab adds build, export, import and
cache to the same parser through :func:`conformance.core.commands.group`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance import images as refs
from conformance.clusters.existing import DEFAULT_IMAGES
from conformance.core import commands, errors, options, output
from conformance.drivers import profiles
from conformance.drivers.helm import resolve_chart

EVERY_RUN = "every run"


def _row(image: str, used_by: str, when: str) -> dict[str, str]:
    return {"image": image, "usedBy": used_by, "when": when}


def helper_rows(visibility_image: str) -> list[dict[str, str]]:
    """The harness's own images (not the driver's): probe, busybox (offline or fallback), gRPC relay, pause."""
    pods = "helper pods (node checks)" if visibility_image else "test, probe and helper pods"
    rows = (
        [_row(visibility_image, "test and probe pods (profile visibility.image)", EVERY_RUN)]
        if visibility_image
        else []
    )
    return rows + [
        _row(refs.OFFLINE["busybox"], pods, "when every node has it (dra-conformance images import); never pulled"),
        _row(DEFAULT_IMAGES["busybox"], pods, "otherwise: pulled from the nodes' registry"),
        _row(
            refs.reference_driver_ref(),
            "helper pods' gRPC relay (node checks)",
            "--node-access privileged-pod, when every node has it; never pulled",
        ),
        _row(refs.OFFLINE["pause"], "pod sandbox of the lab's cluster", "--cluster local or kind"),
    ]


def _chart_row(chart: Any, profile_source: str, when: str) -> dict[str, str]:
    shown = f"{chart['go_module']} {chart.get('path', '')}" if isinstance(chart, Mapping) else str(chart)
    try:
        image = refs.normalize(refs.chart_image(Path(resolve_chart(chart, profile_source=profile_source))))
        return _row(image, f"the driver (chart {shown}; pulled unless the nodes have it)", when)
    except (errors.ConfigError, refs.ImageError, OSError):
        return _row(f"the images of chart {shown}", "the driver (`helm template` the chart to name them)", when)


def _block_rows(deploy: Mapping[str, Any], mode: str, profile_source: str, when: str) -> list[dict[str, str]]:
    rows = (
        [_chart_row(deploy["chart"], profile_source, when)]
        if mode in ("helm", "manifests") and deploy.get("chart")
        else []
    )
    rows += [
        _row(
            refs.reference_driver_ref() if name == "reference-driver" else str(name),
            "the driver on the lab's clusters (profile deploy.images: imported into the nodes, not pulled)",
            when,
        )
        for name in deploy.get("images") or []
    ]
    previous = deploy.get("upgrade_from")
    if isinstance(previous, Mapping) and ("chart" in previous or "images" in previous):
        rows += _block_rows(previous, mode, profile_source, f"{when}, upgrade lane (previous version)")
    return rows


def driver_rows(profile) -> list[dict[str, str]]:
    """The driver's images for each deploy mode of ``profile`` (a DriverProfile): its default mode's, then
    each ``deploy_alternatives`` mode's (``--driver-deploy MODE``)."""
    blocks = [(profile.deploy_mode, profile.deploy, f"--driver-deploy {profile.deploy_mode} (the profile's)")]
    blocks += [(m, d, f"--driver-deploy {m}") for m, d in profile.deploy_alternatives.items()]
    return [row for mode, deploy, when in blocks for row in _block_rows(deploy, mode, profile.source, when)]


def image_rows(driver: str) -> list[dict[str, str]]:
    """Every image a run of ``driver`` (profile name or path) may use, without duplicates, as
    ``[{image, usedBy, when}]``. Raises ConfigError for an unknown or invalid profile."""
    profile = profiles.load(driver)
    rows, seen = [], set()
    for row in helper_rows(profile.visibility.image or "") + driver_rows(profile):
        key = (row["image"], row["when"])  # the first use of an image in a mode says it
        if key not in seen:
            seen.add(key)
            rows.append(row)
    return rows


def _list(args: argparse.Namespace) -> int:
    try:
        rows = image_rows(args.driver)
    except errors.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    if output.wants_json(args):
        output.print_json(rows)
        return 0
    for r in rows:
        print(f"{r['image']}\n    used by: {r['usedBy']}\n    when:    {r['when']}")
    return 0


def register(subparsers) -> None:
    """Add ``images list`` (the ``images`` group is shared with the lab: conformance.core.commands.group)."""
    actions = commands.group(
        subparsers, "images", "the images a run uses: list them (and, with the lab: cache, build, export, import)"
    )
    lst = actions.add_parser(
        "list",
        help="every image a run of a driver may pull (probe, helpers, fallbacks, the driver's)",
        description="Every image a run of the driver may pull: the probe image, the helper pods' images and "
        "their fallbacks, and the driver's images for each deploy mode of its profile.",
    )
    options.add_arguments(lst, ("driver",))
    output.add_output_option(lst)
    lst.set_defaults(func=_list)
