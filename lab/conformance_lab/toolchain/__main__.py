"""`python -m conformance_lab.toolchain {setup,versions,paths}`: the toolchain bootstrap behind `make setup`.

setup     build/install what `make conformance` needs (--all: everything; idempotent; cached per version)
prefetch  download the Go modules setup builds from (stdlib only: `make setup` runs it beside the venv)
versions  print every pinned version (from versions.toml)
paths     print where cached binaries live for a Kubernetes version
"""

from __future__ import annotations

import argparse
import sys

from conformance_lab.toolchain import cache
from conformance_lab.toolchain import cli as toolchain_cli
from conformance_lab.toolchain.versions import VersionError, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance_lab.toolchain",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    toolchain_cli.register(sub)  # setup, versions: the same parsers as `dra-conformance setup|versions`
    sub.add_parser("protos", help="(re)generate gRPC stubs from the project's .proto files")
    f = sub.add_parser("prefetch", help="download the Go modules setup builds from (standard library only: no venv)")
    f.add_argument("--all", action="store_true", help="what `setup --all` builds")
    f.add_argument("--k8s-version", default=None)
    p = sub.add_parser("paths", help="print cache paths")
    p.add_argument("--k8s-version", default=None)
    args = parser.parse_args(argv)
    if hasattr(args, "func"):
        return int(args.func(args) or 0)
    try:
        if args.cmd == "prefetch":
            from conformance_lab.toolchain.setup import prefetch  # noqa: PLC0415

            return 1 if prefetch(args.k8s_version, "all" if args.all else "main") else 0
        if args.cmd == "protos":
            from conformance import protos  # noqa: PLC0415 - grpc_tools only for this command

            print(f"{protos.generate_all()} proto files")
        else:
            v = load()
            print(f"cache      {cache.root()}")
            print(f"kubernetes {cache.k8s_entry(v.k8s_tag(args.k8s_version)) / 'bin'}")
            for t in v.go_tools.values():
                print(f"{t.name:<10} {cache.tool_entry(t.name, t.version) / 'bin'}")
    except VersionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
