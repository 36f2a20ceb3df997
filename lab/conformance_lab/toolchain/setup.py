"""The ordered steps of the lab's setup (`make setup`, `dra-conformance setup`) for one Kubernetes version."""

from __future__ import annotations

import time

from conformance_lab.toolchain import cache, gobuild, k8s, system
from conformance_lab.toolchain.steps import Step
from conformance_lab.toolchain.versions import load


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
        steps.append(Step("allure (npm)", system.install_allure))
    if "images" not in skip:
        steps.append(Step("offline images (pause, busybox, dra-example-driver, reference-driver)", _images_step))
    return steps


def _images_step() -> str:
    """Build every image of the catalog into the cache (cold about 70 s, warm about 2 s)."""
    from conformance_lab.toolchain.images import catalog, store  # noqa: PLC0415 - the reference image needs the venv's pip and grpc_tools

    sizes = [f"{s.name} {s.build().stat().st_size / 2**20:.0f} MiB" for s in catalog.select([])]
    return f"cached in {store.images_dir()}: " + ", ".join(sizes)
