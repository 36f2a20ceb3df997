"""`python -m conformance.toolchain {setup,versions,paths}`: the toolchain bootstrap behind `make setup`.

setup     build/install everything the local cluster and reports need (idempotent; cached per version)
versions  print every pinned version (from versions.toml)
paths     print where cached binaries live for a Kubernetes version
"""

from __future__ import annotations

import argparse
import sys
import time

from conformance.toolchain import cache, gobuild, k8s, system
from conformance.toolchain.steps import SetupError, Step, run_steps
from conformance.toolchain.versions import VersionError, describe, load


def _log_path():
    logs = cache.root() / "logs"
    logs.mkdir(exist_ok=True)
    return logs / f"setup-{time.strftime('%Y%m%d-%H%M%S')}.log"


def setup_steps(k8s_version: str | None, skip: set[str]) -> list[Step]:
    """The ordered steps of `make setup` for one Kubernetes version."""
    v = load()
    tag = v.k8s_tag(k8s_version)
    log = _log_path()
    steps = [
        Step("python environment", system.python_ok),
        Step("gRPC stubs", system.generate_protos),
    ]
    if "debian" not in skip:
        steps.append(Step("debian packages", lambda: system.install_debian(v.debian_packages)))

    def k8s_step():
        was = cache.is_complete(cache.k8s_entry(tag), list(k8s.K8S_PROGRAMS))
        path = k8s.build(tag, log)
        return f"{'cached' if was else 'built'} in {path}"

    steps.append(
        Step(
            f"kubernetes {tag} (kube-apiserver, controller-manager, scheduler, kubelet, "
            f"kube-proxy, kubectl, dra-test-driver)",
            k8s_step,
        )
    )
    for tool in v.go_tools.values():

        def tool_step(tool=tool):
            was = cache.is_complete(cache.tool_entry(tool.name, tool.version), tool.binaries, gobuild.fingerprint(tool))
            path = gobuild.build_tool(tool, log)
            return f"{'cached' if was else 'built'} in {path}"

        steps.append(Step(f"{tool.name} {tool.version}", tool_step))
    if "npm" not in skip:
        steps.append(Step(f"allure {v.allure} (npm)", lambda: system.install_allure(v.allure)))
    if "images" not in skip:
        steps.append(Step("offline images (pause, busybox, dra-example-driver, reference-driver)", _images_step))
    return steps


def _images_step() -> str:
    """Build every image of the catalog into the cache (cold about 70 s, warm about 2 s)."""
    from conformance.toolchain.images import catalog, store  # noqa: PLC0415 - the reference image needs the venv's pip and grpc_tools

    sizes = [f"{s.name} {s.build().stat().st_size / 2**20:.0f} MiB" for s in catalog.select([])]
    return f"cached in {store.images_dir()}: " + ", ".join(sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.toolchain",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="build and install the toolchain (idempotent)")
    s.add_argument("--k8s-version", default=None, help="Kubernetes minor to build, e.g. 1.35 (default: pinned)")
    s.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=["debian", "npm", "images"],
        help="skip a host-level step (for machines managed otherwise)",
    )
    sub.add_parser("versions", help="print pinned versions")
    sub.add_parser("protos", help="(re)generate gRPC stubs from the project's .proto files")
    p = sub.add_parser("paths", help="print cache paths")
    p.add_argument("--k8s-version", default=None)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "versions":
            print("\n".join(describe(load())))
        elif args.cmd == "protos":
            from conformance.toolchain import protos  # noqa: PLC0415 - grpc_tools only for this command

            print(f"{protos.generate_all()} proto files")
        elif args.cmd == "paths":
            v = load()
            print(f"cache      {cache.root()}")
            print(f"kubernetes {cache.k8s_entry(v.k8s_tag(args.k8s_version)) / 'bin'}")
            for t in v.go_tools.values():
                print(f"{t.name:<10} {cache.tool_entry(t.name, t.version) / 'bin'}")
        else:
            run_steps(setup_steps(args.k8s_version, set(args.skip)))
    except (SetupError, VersionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
