"""The steps of the lab's setup for one Kubernetes version, in two scopes.

- ``main`` (`make setup`, `dra-conformance setup`): what the main job (`make conformance`: the local cluster and
  the bundled reference driver) needs: Debian packages, Kubernetes, etcd, containerd, the Allure CLI, the pause
  and busybox images. It ends with ``ready: make conformance can start``.
- ``all`` (`make setup-all`, `dra-conformance setup --all`; CI): also every other pinned Go tool (kwok, kind, helm,
  registry, drivers), actionlint and the Groovy parser (the CI-template checks of `make test`, which never
  download), every catalog image and the kind node image. Each of those is otherwise built on first use
  (:mod:`conformance_lab.toolchain.firstuse`).

Downloads run beside the builds: Debian packages and npm in the background, each Go build's modules fetched
(`go mod tidy`) from the start (:mod:`conformance_lab.toolchain.steps`).
"""

from __future__ import annotations

import time

from conformance_lab.toolchain import cache, citools, gobuild, k8s, system
from conformance_lab.toolchain.steps import Step
from conformance_lab.toolchain.versions import GoTool, load

MAIN_TOOLS = ("etcd", "containerd")  # the local cluster's own programs (conformance_lab/local/preflight.py)
MAIN_IMAGES = ("pause", "busybox")  # the local cluster's sandbox and probe/helper pods
SCOPES = ("main", "all")


def _log_path():
    logs = cache.root() / "logs"
    logs.mkdir(exist_ok=True)
    return logs / f"setup-{time.strftime('%Y%m%d-%H%M%S')}.log"


def _go_tool_step(tool: GoTool, log) -> Step:
    """Build one pinned Go tool; its modules download from the start (prefetch) unless it is cached."""

    def prefetch():
        return None if gobuild.is_built(tool) else gobuild.prepare_tool(tool, log)

    def run(prepared=None):
        was = gobuild.is_built(tool)
        path = gobuild.build_tool(tool, log, prepared=prepared)
        return f"{'cached' if was else 'built'} in {path}"

    return Step(f"{tool.name} {tool.version}", run, prefetch=prefetch)


def _k8s_step(tag: str, log) -> Step:
    def prefetch():
        return None if k8s.is_built(tag) else k8s.prepare(tag, log)

    def run(prepared=None):
        was = k8s.is_built(tag)
        path = k8s.build(tag, log, prepared=prepared)
        return f"{'cached' if was else 'built'} in {path}"

    programs = ", ".join(k8s.K8S_PROGRAMS)
    return Step(f"kubernetes {tag} ({programs})", run, prefetch=prefetch)


def setup_steps(k8s_version: str | None, skip: set[str], scope: str = "main") -> list[Step]:
    """The steps of `make setup` (``scope`` "main") or `make setup-all` ("all") for one Kubernetes version
    (a minor such as "1.35"; None: the pinned default). ``skip``: step kinds left out ("debian", "npm",
    "images", "kind"). Raises VersionError for an unpinned version, ValueError for an unknown scope."""
    if scope not in SCOPES:
        raise ValueError(f"unknown setup scope {scope!r}; use one of {', '.join(SCOPES)}")
    v = load()
    tag = v.k8s_tag(k8s_version)
    log = _log_path()
    steps = [Step("python environment", system.python_ok), Step("gRPC stubs", system.generate_protos)]
    debian = "debian packages"
    if "debian" not in skip:
        steps.append(Step(debian, lambda: system.install_debian(v.debian_packages), background=True))
    if "npm" not in skip:
        steps.append(Step("allure (npm)", system.install_allure, background=True))
    steps.append(_k8s_step(tag, log))
    tools = [t for t in v.go_tools.values() if (scope == "all" and not t.on_use_only) or t.name in MAIN_TOOLS]
    steps += [_go_tool_step(t, log) for t in tools]
    if (
        scope == "all"
    ):  # the CI-template checks of `make test` look in the cache only (conformance_lab/toolchain/citools.py)
        steps += [_go_tool_step(v.ci_tools["actionlint"], log), Step("groovy parser", citools.setup_groovy)]
    needs = (debian,) if "debian" not in skip else ()  # busybox comes from Debian's busybox-static
    if "images" not in skip:
        names = [] if scope == "all" else list(MAIN_IMAGES)
        label = "every catalog image" if scope == "all" else ", ".join(MAIN_IMAGES)
        steps.append(Step(f"offline images ({label})", lambda: _images_step(names), needs=needs))
    if scope == "all":
        steps += [_go_tool_step(t, log) for t in v.kind_tools.values()]
        if "kind" not in skip:
            steps.append(Step(f"kind node image {tag}", lambda: _kind_node_image(tag), needs=needs))
    return steps


def _images_step(names: list[str]) -> str:
    """Build the named catalog images (all but optional ones when empty) into the cache (warm about 2 s)."""
    from conformance_lab.toolchain.images import catalog, store  # noqa: PLC0415 - the reference image needs the venv's pip and grpc_tools

    sizes = [f"{s.name} {s.build().stat().st_size / 2**20:.0f} MiB" for s in catalog.select(names)]
    return f"cached in {store.images_dir()}: " + ", ".join(sizes)


def _kind_node_image(tag: str) -> str:
    """The offline kind node image of ``tag`` (nerdctl, kubeadm, coredns, crictl, a Debian rootfs)."""
    from conformance_lab.toolchain.kindnode import build  # noqa: PLC0415 - mmdebstrap and friends on demand

    ref, archive = build.node_image(tag)
    return f"{ref} in {archive}"


def prefetch(k8s_version: str | None, scope: str = "main", out=None) -> int:
    """Download the Go modules of every build ``scope`` plans (each step's ``prefetch``), PARALLEL_DOWNLOADS at
    once, printing ``[prefetch] <step>: modules downloaded (N s)``; return how many failed. Needs only the
    standard library, so `make setup` runs it beside the venv's pip install; a failure is left for setup itself
    to retry and report."""
    import concurrent.futures  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from conformance_lab.toolchain.steps import PARALLEL_DOWNLOADS  # noqa: PLC0415

    out = out or sys.stdout
    steps = [s for s in setup_steps(k8s_version, {"debian", "npm", "images", "kind"}, scope) if s.prefetch]

    def one(step: Step) -> str:
        start = time.monotonic()
        try:
            step.prefetch()
        except Exception as exc:  # noqa: BLE001 - setup retries the step and reports the error with its fix
            return f"[prefetch] {step.name}: failed ({type(exc).__name__}; `setup` retries it)"
        return f"[prefetch] {step.name}: modules downloaded ({time.monotonic() - start:.0f} s)"

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_DOWNLOADS) as pool:
        for line in pool.map(one, steps):
            failed += "failed" in line
            print(line, file=out, flush=True)
    return failed
