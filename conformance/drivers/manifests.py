"""Manifests deployer: ``kubectl apply`` of a bundle of manifests (the cluster version's kubectl from the
toolchain cache), ``kubectl delete`` of exactly that bundle on tear-down.

Profile keys (``deploy`` with ``mode: manifests``, or ``deploy_alternatives.manifests``): ``dir`` -- the YAML
bundle a vendor ships: a directory of ``*.yaml``/``*.yml``/``*.json`` files or one file (relative to the
profile file); or ``chart`` -- a chart rendered with ``helm template`` at deploy time (as :mod:`.helm` resolves
it) with ``release``, ``values`` and ``env_values`` (:mod:`.chartvalues`); ``namespace`` -- where namespaced
objects without one go; created (and deleted afterwards) when the bundle lacks it and the cluster has none;
``images`` (imported into every node first, :mod:`.nodeimages`); ``timeout_s`` (readiness, default 300).

Ready means: every DaemonSet of the bundle runs a Ready pod on each of its nodes, the profile's DeviceClasses
exist, the kubelet of every real node holds a new plugin registration (KEP-4381) and every real node publishes
a slice with a device. Tear-down deletes the bundle's objects (namespace, RBAC, DeviceClasses, DaemonSet, ...)
waiting for them, then the driver's leftover slices, and raises LeakError naming any object still there.
A bundle of which any object already exists on the cluster is refused before anything is applied
(ConfigError): tear-down deletes only objects this run created.
The applied bundle is kept as ``<state dir>/manifests.yaml`` (evidence).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance import toolbox
from conformance.core import errors
from conformance.core.handles import ClusterHandle
from conformance.core.profile import DriverProfile
from conformance.drivers import bundle as bundles
from conformance.drivers import chartvalues, nodeimages, readiness
from conformance.drivers.base import DeployContext, DeployedDriver
from conformance.drivers.daemonset_plugin import DaemonSetDriver
from conformance.drivers.helm import resolve_chart
from conformance.drivers.readiness import (
    await_daemonsets,
    await_registered,
    await_slices,
    check_device_classes,
    delete_slices,
    registered_sockets,
)
from conformance.k8s import kubeconfig
from conformance.k8s.client import K8s


class ManifestsDeployer:
    """Applies the profile's bundle (``deploy.dir`` or a rendered ``deploy.chart``; module docstring)."""

    def __init__(
        self,
        cluster: ClusterHandle,
        profile: DriverProfile,
        k8s: K8s,
        state_dir: Path,
        *,
        image_repo: str | None = None,
        kube: kubeconfig.Kubeconfig | None = None,
    ) -> None:
        self.cluster, self.profile, self.k8s, self.state_dir = cluster, profile, k8s, state_dir
        self._kube = kube
        self.image_repo = image_repo
        d = profile.deploy
        self.namespace = str(d.get("namespace") or "")
        self.timeout = float(d.get("timeout_s", 300))
        self.bundle_file = state_dir / "manifests.yaml"
        self.applied: bundles.Bundle | None = None

    @classmethod
    def from_context(cls, ctx: DeployContext) -> ManifestsDeployer:
        """The registry factory of ``manifests``; ConfigError when the profile names no manifests or chart."""
        if ctx.profile.deploy_mode != "manifests":
            raise errors.ConfigError(
                f"profile {ctx.profile.name} has no manifests",
                source="--driver-deploy",
                fix="add deploy.dir or deploy.chart (or deploy_alternatives.manifests), or use another mode",
            )
        return cls(
            ctx.cluster,
            ctx.profile,
            ctx.k8s,
            ctx.state_root / "manifests",
            image_repo=ctx.image_repo,
            kube=ctx.kubeconfig,
        )

    @property
    def kube(self) -> kubeconfig.Kubeconfig:
        """What kubectl reaches the cluster with: the run's resolved kubeconfig and context, else the cluster
        handle's file (conformance.k8s.kubeconfig)."""
        return self._kube or kubeconfig.resolve(self.cluster.kubeconfig)

    def _kubectl(self, *args: str, timeout: float = 300) -> str:
        try:
            binary = toolbox.program("kubectl", k8s_version=self.cluster.k8s_version)
        except toolbox.ToolMissing as exc:
            raise errors.ConfigError(str(exc), source="--driver-deploy manifests", fix="run `make setup`") from None
        cmd = [str(binary), *self.kube.cli_args("kubectl"), *args]
        if self.namespace:
            cmd += ["--namespace", self.namespace]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.kube.env())
        if proc.returncode != 0:
            raise errors.DriverNotReady(
                self.profile.driver, f"kubectl {args[0]} -f {self.bundle_file}", proc.stderr.strip()[-2000:]
            )
        return proc.stdout

    def bundle(self) -> bundles.Bundle:
        """The objects to apply: the profile's manifests, or its chart rendered with its values; plus the
        namespace when it must be created. Raises ConfigError."""
        d = self.profile.deploy
        if d.get("chart"):
            try:
                helm = toolbox.program("helm")
            except toolbox.ToolMissing as exc:
                raise errors.ConfigError(str(exc), source="--driver-deploy manifests", fix="run `make setup`") from None
            values = chartvalues.chart_values(d, os.environ, self.image_repo, [n.name for n in self.cluster.nodes])
            release = str(d.get("release") or self.profile.name)
            ns = self.namespace or self.profile.name
            self.namespace = ns
            found = bundles.render(
                helm,
                resolve_chart(d["chart"], profile_source=self.profile.source),
                release,
                ns,
                bundles.values_file(values, self.state_dir),
            )
        else:
            base = Path(self.profile.source).parent if self.profile.source else Path.cwd()
            found = bundles.read((base / str(d["dir"])).resolve())
        if self.namespace and not self.k8s.exists("Namespace", self.namespace):
            found = found.with_namespace(self.namespace)
        return found

    def deploy(self) -> DeployedDriver:
        """Load images, apply the bundle, then require ready DaemonSets, DeviceClasses, a registration and
        slices on every node. Raises ConfigError or DriverNotReady (after deleting what it applied)."""
        found = self.bundle()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.bundle_file.write_text(found.text())
        self.refuse_existing()  # before anything is imported or applied: a refusal deletes nothing
        nodeimages.load(self.cluster, self.profile.deploy.get("images") or [])
        nodes = [n.name for n in self.cluster.nodes]
        before = registered_sockets(self.k8s, nodes)
        try:
            self.applied = found
            self._kubectl("apply", "-f", str(self.bundle_file))
            ds = [
                (d["metadata"].get("namespace") or self.namespace or "default", d["metadata"]["name"])
                for d in found.of_kind("DaemonSet")
            ]
            await_daemonsets(self.k8s, self.profile.driver, ds, timeout=self.timeout)
            check_device_classes(self.k8s, self.profile)
            await_registered(self.k8s, self.profile.driver, before, timeout=self.timeout, logs=self.pod_logs)
            await_slices(self.k8s, self.profile, nodes, timeout=self.timeout, logs=self.pod_logs)
        except BaseException:
            with contextlib.suppress(errors.ConformanceError):  # the deploy's own error is the one to report
                self.teardown()
            raise
        return self.attach({"version": f"{len(found.documents)} object(s) from {found.source}"})

    def refuse_existing(self) -> None:
        """Raise ConfigError (exit 4) naming the objects of the bundle that already exist on the cluster
        (``kubectl get -f``): tear-down deletes the bundle's objects, and must never delete one this run did
        not create (issue 22). Applies and deletes nothing; DriverNotReady when kubectl cannot read them."""
        there = self._kubectl("get", "--ignore-not-found", "-o", "name", "-f", str(self.bundle_file)).split()
        if there:
            raise errors.ConfigError(
                f"{len(there)} object(s) of the bundle already exist, e.g. {', '.join(there[:5])}: this run did "
                "not create them, so it neither applies over nor deletes them",
                source="--driver-deploy manifests",
                fix="drop --driver-deploy (and --allow-install) to qualify the installed driver (preinstalled), "
                "or remove the old installation first",
            )

    def attach(self, state: Mapping[str, Any]) -> DeployedDriver:
        """The handle (also in xdist workers): logs come from the pods of the bundle's namespaces."""
        return DaemonSetDriver.of(
            self.profile,
            "manifests",
            version=str(state.get("version", "")),
            log_source=self.pod_logs,
            daemonset_namespaces=tuple(self._namespaces()),
            k8s=self.k8s,
        )

    def _namespaces(self) -> list[str]:
        if self.applied is None:
            found = {self.namespace} if self.namespace else set()
        else:
            found = {d["metadata"].get("namespace") or self.namespace for d in self.applied.of_kind("DaemonSet")}
        return sorted(n for n in found if n)

    def pod_logs(self) -> dict[str, str]:
        """Logs of every container in the namespaces of the bundle's DaemonSets (best effort)."""
        return readiness.pod_logs(self.k8s, self._namespaces())

    def teardown(self) -> None:
        """Delete exactly the applied objects (waiting for them to be gone), then the driver's leftover
        slices. Idempotent. Raises LeakError naming the objects still there afterwards."""
        if self.applied is None:
            return
        problems = []
        try:
            self._kubectl("delete", "--ignore-not-found", "--wait=true", "--timeout=240s", "-f", str(self.bundle_file))
        except errors.ConformanceError as exc:
            problems.append(str(exc))
        delete_slices(self.k8s, self.profile.driver)
        try:
            left = self._kubectl("get", "--ignore-not-found", "-o", "name", "-f", str(self.bundle_file)).split()
        except errors.ConformanceError as exc:
            left, problems = [], [*problems, str(exc)]
        self.applied = None
        if left or problems:
            raise errors.LeakError(left, problems)
