"""BenchConfig: the benchmark's options, validated once (bad input -> ConfigError naming the option and fix)."""

from __future__ import annotations

import dataclasses

from conformance.core.errors import ConfigError

VARIANTS = ("template", "cel", "match-attribute", "prioritized", "shared")
"""DRA workloads: ResourceClaimTemplate with one device; the same with a CEL selector on attributes; two
devices with a ``matchAttribute`` constraint on the PCIe root; a ``firstAvailable`` list whose first
subrequest never matches; pods sharing one ResourceClaim in groups of ``share``."""
CLASSIC = "classic"
"""The same one-device workload with a classic extended resource (``example.com/gpu``)."""
MIRROR_VARIANTS = ("template", "cel", "prioritized", "shared")
"""The variants a mirrored device model runs (``match-attribute`` needs the reference driver's PCIe-root pairs);
``cel`` only with ``mirror_selector``, which replaces the reference driver's selector. What does not run is
named in the report with the reason (:func:`conformance_tools.bench.mirror.unfit`)."""
MAX_NODES = 5000
MAX_DEVICES = 128


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    """nodes x devices: the fleet of the main point (all variants run there); pods: pods per workload (capped
    at what the fleet can hold, see :func:`conformance_tools.bench.workload.pods_for`); scale_points: fleet sizes
    at which the ``template`` and ``classic`` workloads also run; variants: DRA variants at the main point;
    share: pods per shared claim; k8s_version/feature_gates: the local cluster; timeout: seconds one workload
    may take to bind every pod; client_qps: API client QPS and burst of kube-scheduler and
    kube-controller-manager (``--kube-api-qps/--kube-api-burst``; 0 keeps their defaults, 50/100 and 20/30,
    which cap DRA throughput: the resourceclaim controller writes a claim and a pod status per pod, the
    scheduler a claim status and a binding); out_dir: report directory; html: build the Allure HTML.
    mirror: a driver name: mirror the slices it published on one node (``mirror_node``, default the first)
    onto every fake node instead of the reference fleet (:mod:`conformance_tools.bench.mirror`), read from
    ``mirror_slices`` (a file) or else the cluster of ``mirror_kubeconfig`` ("" = $KUBECONFIG or
    ~/.kube/config); ``mirror_selector``: a CEL expression for the ``cel`` variant of the mirror."""

    nodes: int = 100
    devices: int = 8
    pods: int = 1000
    scale_points: tuple[int, ...] = (10, 100, 500)
    variants: tuple[str, ...] = VARIANTS
    classic: bool = True
    share: int = 4
    k8s_version: str | None = None
    feature_gates: str = "defaults"
    timeout: float = 600.0
    client_qps: int = 1000
    out_dir: str = ""
    html: bool = True
    mirror: str = ""
    mirror_slices: str = ""
    mirror_kubeconfig: str = ""
    mirror_node: str = ""
    mirror_selector: str = ""

    def validate(self) -> BenchConfig:
        """Check every option; returns self. Raises ConfigError naming the option and the fix."""
        for name, value, low, high in (
            ("nodes", self.nodes, 1, MAX_NODES),
            ("devices", self.devices, 2, MAX_DEVICES),
            ("pods", self.pods, 1, 100_000),
            ("share", self.share, 1, 256),
            ("client-qps", self.client_qps, 0, 100_000),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(
                    f"{value!r} is out of range", field=f"--{name}", fix=f"use an integer from {low} to {high}"
                )
        for point in self.scale_points:
            if not isinstance(point, int) or not 1 <= point <= MAX_NODES:
                raise ConfigError(
                    f"scale point {point!r} is out of range",
                    field="--scale-points",
                    fix=f"use comma-separated node counts from 1 to {MAX_NODES}, e.g. 10,100,500",
                )
        unknown = [v for v in self.variants if v not in VARIANTS]
        if unknown:
            raise ConfigError(f"unknown variant(s) {unknown}", field="--variants", fix=f"use some of {list(VARIANTS)}")
        if self.timeout <= 0:
            raise ConfigError(f"{self.timeout!r} must be positive", field="--timeout", fix="e.g. 600")
        return self

    def run_variants(self) -> tuple[str, ...]:
        """The DRA variants this run measures at the main point: with a mirror only those of
        :data:`MIRROR_VARIANTS` (``cel`` only with ``mirror_selector``)."""
        if not self.mirror:
            return self.variants
        keep = {v for v in MIRROR_VARIANTS if v != "cel" or self.mirror_selector}
        return tuple(v for v in self.variants if v in keep)

    def points(self) -> list[int]:
        """Fleet sizes to run, ascending, always including the main point ``nodes``."""
        return sorted({*self.scale_points, self.nodes})


def parse_points(text: str) -> tuple[int, ...]:
    """``"10,100,500"`` -> (10, 100, 500); ``""`` -> (). Raises ConfigError naming the bad item."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            out.append(int(item))
        except ValueError:
            raise ConfigError(f"{item!r} is not a node count", field="--scale-points", fix="e.g. 10,100,500") from None
    return tuple(out)
