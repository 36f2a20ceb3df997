"""`dra-conformance images cache|build|export|import|push`: the lab's offline images (the plugin owns ``images list``,
every image a run may pull; both fill the one ``images`` command through conformance.core.commands.group).

``cache`` prints every offline image (name, image reference, where it comes from, whether it is cached); ``build``
builds the named ones (all by default) into the cache; ``export --to DIR`` writes their archives and an
``images.json`` index; ``import`` loads archives (``--from DIR`` of an export, else the cache) into every node
of a running local cluster, or into the containerd sockets given with ``--socket``; ``push --registry
HOST[:PORT][/PREFIX]`` pushes them to a registry under their own paths (conformance.images.in_registry, the
mapping ``--image-registry`` reads them back with; conformance_lab.registry.push). Exit codes: 0 done,
1 an image could not be built or loaded, 4 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from conformance.core import commands
from conformance.images import check_registry
from conformance_lab.toolchain.cache import CacheMiss
from conformance_lab.toolchain.images import catalog
from conformance_lab.toolchain.images.ctr import image_names, import_image
from conformance_lab.toolchain.images.oci import ImageError


def _fail(exc: Exception, code: int = 1) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return code


def _status(spec: catalog.ImageSpec) -> dict:
    row = {"name": spec.name, "ref": "", "used_by": spec.used_by, "source": spec.source}
    try:
        row["ref"] = spec.ref()
        path = spec.cached()
    except (ImageError, CacheMiss, OSError) as exc:
        return row | {"cached": False, "note": str(exc)}
    if path is None:
        return row | {"cached": False, "note": "not built yet: dra-conformance images build " + spec.name}
    return row | {"cached": True, "archive": str(path), "size": path.stat().st_size}


def _list(args: argparse.Namespace) -> int:
    try:
        rows = [_status(s) for s in catalog.select(args.names, include_optional=True)]
    except ImageError as exc:
        return _fail(exc, 4)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        cached = f"cached, {r['size'] / 2**20:.0f} MiB: {r['archive']}" if r["cached"] else f"NOT cached ({r['note']})"
        print(f"{r['name']:<19} {r['ref'] or '?'}\n{'':<19} used by: {r['used_by']}")
        print(f"{'':<19} source:  {r['source']}\n{'':<19} {cached}")
    return 0


def _build(args: argparse.Namespace) -> int:
    try:
        chosen = catalog.select(args.names)
    except ImageError as exc:
        return _fail(exc, 4)
    for spec in chosen:
        t0 = time.monotonic()
        try:
            path = spec.build()
        except (ImageError, CacheMiss) as exc:
            return _fail(f"image {spec.name}: {exc}")
        size = path.stat().st_size / 2**20
        print(f"{spec.name:<19} {spec.ref()}  {size:.0f} MiB  {path}  ({time.monotonic() - t0:.1f} s)")
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        chosen = catalog.select(args.names)
        records = catalog.export(chosen, Path(args.to))
    except ImageError as exc:
        return _fail(exc, 4 if "unknown image" in str(exc) else 1)
    except CacheMiss as exc:
        return _fail(exc)
    for r in records:
        print(f"{r['file']:<28} {r['ref']}  {r['digest'][:19]}  {r['size'] / 2**20:.0f} MiB")
    print(f"index: {Path(args.to) / catalog.INDEX}")
    return 0


def _archives(args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    if args.from_dir:
        return catalog.load_dir(Path(args.from_dir), args.names)
    return [(s.name, s.ref(), s.build()) for s in catalog.select(args.names)]


def _import(args: argparse.Namespace) -> int:
    try:
        if args.from_dir and not Path(args.from_dir).is_dir():
            raise ValueError(f"--from {args.from_dir}: no such directory (an `images export --to` directory)")
        if args.socket and not args.ctr:
            raise ValueError("--socket needs --ctr PATH (the ctr client matching that containerd)")
    except ValueError as exc:
        return _fail(exc, 4)
    try:
        loaded = _archives(args)
        if args.socket:
            targets = [(s, Path(args.ctr), Path(s)) for s in args.socket]
        else:
            from conformance_lab.local.images import node_targets  # noqa: PLC0415 - the local provider only when asked for

            _, ctr, nodes = node_targets(args.cluster)
            targets = [(node, ctr, socket) for node, socket in nodes]
        for where, ctr, socket in targets:
            for _, _, path in loaded:
                import_image(ctr, socket, path)
            present = image_names(ctr, socket)
            absent = [ref for _, ref, _ in loaded if ref not in present]
            if absent:
                raise ImageError(f"{where}: containerd does not list {absent} after the import")
            print(f"{where}: {', '.join(ref for _, ref, _ in loaded)}")
    except (ImageError, CacheMiss) as exc:
        return _fail(exc)
    return 0


def _push(args: argparse.Namespace) -> int:
    from conformance_lab.registry.push import push_archive  # noqa: PLC0415 - HTTP client only when pushing

    try:
        registry = check_registry(args.registry)
        loaded = _archives(args)
    except ImageError as exc:
        return _fail(exc, 4 if "registry" in str(exc) or "unknown image" in str(exc) else 1)
    except CacheMiss as exc:
        return _fail(exc)
    for name, _, path in loaded:
        t0 = time.monotonic()
        try:
            pushed = push_archive(path, registry)
        except ImageError as exc:
            return _fail(f"image {name}: {exc}")
        print(f"{name:<19} {pushed}  ({time.monotonic() - t0:.1f} s)")
    return 0


def register(subparsers) -> None:
    """Add build|export|import|cache to the shared `images` command; each parser sets ``func(args) -> int``."""
    sub = commands.group(
        subparsers, "images", "the images a run uses: list them (and, with the lab: cache, build, export, import)"
    )
    names_help = (
        "image names (default: all): " + ", ".join(catalog.DEFAULT_IMAGES) + ", dra-example-driver, reference-driver"
    )
    lst = sub.add_parser("cache", help="the lab's offline images: name, reference, source, cached or not")
    lst.add_argument("names", nargs="*", help=names_help)
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(func=_list)
    build = sub.add_parser("build", help="build images into the cache (offline; no registry)")
    build.add_argument("names", nargs="*", help=names_help)
    build.set_defaults(func=_build)
    exp = sub.add_parser("export", help="write archives + images.json to a directory (for an air-gapped cluster)")
    exp.add_argument("names", nargs="*", help=names_help)
    exp.add_argument("--to", required=True, metavar="DIR", help="directory to write (created)")
    exp.set_defaults(func=_export)
    imp = sub.add_parser("import", help="load archives into a local cluster's nodes or given containerd sockets")
    imp.add_argument("names", nargs="*", help=names_help)
    imp.add_argument("--from", dest="from_dir", metavar="DIR", help="an `images export` directory (default: the cache)")
    imp.add_argument("--cluster", help="local cluster name (default: the only one running)")
    imp.add_argument("--socket", action="append", default=[], help="a containerd socket instead (repeatable)")
    imp.add_argument("--ctr", help="ctr client for --socket")
    imp.set_defaults(func=_import)
    push = sub.add_parser("push", help="push archives (the cache, or --from DIR) to a registry, under their own paths")
    push.add_argument("names", nargs="*", help=names_help)
    push.add_argument("--registry", required=True, metavar="HOST[:PORT][/PREFIX]", help="e.g. 127.0.0.1:5000/dra")
    push.add_argument("--from", dest="from_dir", metavar="DIR", help="an `images export` directory (default: cache)")
    push.set_defaults(func=_push)
