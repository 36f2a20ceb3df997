"""`dra-conformance install`: start a local cluster, deploy a driver into it the way a run does, and leave both
running, so the cluster can then be qualified as an existing one (``run --cluster existing --kubeconfig ...
--driver-deploy preinstalled --node-access privileged-pod``) -- the path of a real GPU cluster whose admin
installed the driver with Helm.

The cluster and the driver come from the same registry entries a run uses (provider ``local``, the deployer of
``--driver-deploy``), so the cluster is the one ``run --cluster local --driver-deploy helm`` brings up (nodes
with DaemonSet paths for the pod modes). The offline images every qualification needs on the nodes (busybox;
the reference-driver image, the helper pods' gRPC relay) are imported too. Nothing is torn down on success;
``dra-conformance cluster down --name <name>`` removes all of it. On a failure everything started is removed.
Exit codes: 0 installed, 2 interrupted (Ctrl-C or SIGTERM; removed as on a failure), 3 cluster or driver not usable,
4 bad input.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from conformance import images as refs
from conformance.clusters import builtin as builtin_clusters
from conformance.clusters.existing import images_on_every_node
from conformance.core import names
from conformance.core.config import from_options
from conformance.core.errors import ClusterUnavailable, ConfigError, ConformanceError
from conformance.core.handles import LoadsImages, ProviderContext
from conformance.drivers import builtin as builtin_drivers
from conformance.drivers import profiles
from conformance.drivers.base import DeployContext
from conformance.k8s import discovery, waits
from conformance.k8s.client import K8s
from conformance.runner.registry import Registry
from conformance_lab.toolchain import versions
from conformance_lab.toolchain.images import catalog
from conformance_lab.toolchain.images.oci import ImageError

QUALIFICATION_IMAGES = ("busybox", "reference-driver")  # `dra-conformance images cache` names


def _print(line: str) -> None:
    print(f"[dra-conformance] {line}", flush=True)


def registry() -> Registry:
    """The shipped providers and deployers plus the installed entry points (no pytest plugins here)."""
    reg = Registry()
    reg.add_hook_result("cluster provider", builtin_clusters.pytest_dra_cluster_providers(), "builtin")
    reg.add_hook_result("driver deployer", builtin_drivers.pytest_dra_driver_deployers(), "builtin")
    reg.add_entry_points()
    return reg


def _await_node_images(k8s: K8s, wanted: set[str]) -> None:
    """Wait until every Node's ``status.images`` lists ``wanted`` (the kubelet posts a changed image list with
    its next node status, ~10 s): a run on the existing-cluster path reads the test and relay images from there
    (clusters.existing.choose_images). Raises ClusterUnavailable naming the missing images after 120 s."""
    seen: set[str] = set()

    def listed() -> bool:
        seen.clear()
        seen.update(images_on_every_node(discovery.nodes(k8s)))
        return wanted <= seen

    if not waits.poll(listed, timeout=120.0, interval=2.0):
        raise ClusterUnavailable(f"the nodes' status.images never listed {sorted(wanted - seen)} after importing them")


def _install(args: argparse.Namespace) -> int:
    reg, provider, deployer = registry(), None, None
    try:
        values = {k: getattr(args, k) for k in ("driver", "driver_deploy", "feature_gates", "nodes", "k8s_version")}
        known = tuple(versions.load().k8s_releases)
        cfg = from_options({**values, "cluster": "local", "run_id": names.new_run_id()}, known_versions=known)
        profile = profiles.load(cfg.driver, reg.deploy_modes())
        mode = cfg.driver_deploy or profile.deploy_mode
        if mode not in args.pod_modes:
            raise ConfigError(
                f"deploy mode {mode!r} runs no DaemonSet: it would end with this command",
                source="--driver-deploy",
                fix=f"use one of {', '.join(args.pod_modes)}",
            )
        profile = profile.for_mode(mode)
        report_dir = Path(args.log_dir or Path("reports") / "install" / cfg.run_id)
        provider = reg.cluster_provider("local")(ProviderContext(cfg, report_dir, _print, mode))
        cluster = provider.up()
        if isinstance(cluster, LoadsImages):
            _print(f"importing images {', '.join(QUALIFICATION_IMAGES)} into every node")
            chosen = catalog.select(list(QUALIFICATION_IMAGES), dict(getattr(cluster, "images", {})))
            cluster.load_images([spec.build() for spec in chosen])
        k8s = K8s.from_kubeconfig(cluster.kubeconfig)
        if isinstance(cluster, LoadsImages):
            _await_node_images(k8s, {refs.normalize(spec.ref()) for spec in chosen})
        deployer = reg.driver_deployer(mode)(
            DeployContext(mode, cluster, profile, k8s, cfg.run_id, report_dir / "driver-state")
        )
        _print(f"deploying driver {profile.driver} ({mode})")
        deployer.deploy()
    except (ConformanceError, ImageError, OSError, subprocess.SubprocessError, KeyboardInterrupt) as exc:
        # whatever stopped it (bad input found late, e.g. a profile's upgrade_from; helm missing or hung;
        # Ctrl-C), nothing this command started stays behind
        print(f"error: {exc or type(exc).__name__}", file=sys.stderr)
        if deployer is not None:
            deployer.teardown()
        if provider is not None:
            provider.down()
        return 4 if isinstance(exc, ConfigError) else 2 if isinstance(exc, KeyboardInterrupt) else 3
    name = provider.state().get("name", "")
    print(f"\ndriver {profile.driver} installed ({mode}) on local cluster {name}")
    print(f"kubeconfig: {cluster.kubeconfig}")
    print(
        f"qualify it: dra-conformance run --cluster existing --kubeconfig {cluster.kubeconfig} "
        f"--driver {args.driver} --driver-deploy preinstalled --node-access privileged-pod"
    )
    print(f"remove it:  dra-conformance cluster down --name {name}")
    return 0


def register(subparsers) -> None:
    """Add `install`; its parser sets ``func(args) -> int``."""
    p = subparsers.add_parser(
        "install", help="start a local cluster with a driver deployed from its chart, and leave both running"
    )
    p.add_argument("--driver", default="reference", help="driver profile name or path (default reference)")
    p.add_argument("--driver-deploy", dest="driver_deploy", default="helm", help="helm (default) or manifests")
    p.add_argument("--nodes", type=int, default=2, help="real kubelet nodes (1-8, default 2)")
    p.add_argument("--feature-gates", dest="feature_gates", default="all", help="defaults | all (default)")
    p.add_argument("--k8s-version", dest="k8s_version", default=None, help="Kubernetes minor, e.g. 1.34")
    p.add_argument("--log-dir", dest="log_dir", default=None, help="logs (default reports/install/<run-id>)")
    p.set_defaults(func=_install, pod_modes=("helm", "manifests"))
