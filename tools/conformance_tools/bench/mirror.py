"""``bench --mirror``: a real driver's device model at fleet scale. The ResourceSlices one driver published for
one node (devices, attributes, capacities, shared counters and the partitions consuming them) are read from a
cluster (or a YAML/JSON file of them), then copied onto every kwok fake node of the benchmark's own cluster:
same spec, ``nodeName`` set to the fake node, pools renamed per fake node, labelled with the bench ID. The
scheduler then allocates against exactly that slice layout.

API: resource.k8s.io/v1 ResourceSlice (``spec.pool``, ``nodeName``, ``devices[].consumesCounters``,
``sharedCounters``; KEP-4815 partitionable devices, feature gate DRAPartitionableDevices). Upstream
counterpart: test/integration/scheduler_perf/dra (slices generated per node). Everything here is linear in
nodes x slices.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from conformance.core.errors import ConfigError
from conformance.k8s.client import K8s
from conformance_tools.bench import workload

NODE_LOCAL_ONLY = ("nodeSelector", "allNodes", "perDeviceNodeSelection")


@dataclasses.dataclass(frozen=True)
class Mirror:
    """The device model to mirror: ``driver``, the source ``node`` and its ``slices`` (raw dicts, spec only is
    used); ``units``: devices one fake node can certainly hold at once (see :func:`units`)."""

    driver: str
    node: str
    slices: tuple[dict, ...]
    units: int

    def describe(self) -> dict:
        """Report fields: driver, node, slice/device/counter-set counts, partitioned or not, units per node."""
        devices = [d for s in self.slices for d in s["spec"].get("devices") or []]
        counter_sets = sum(len(s["spec"].get("sharedCounters") or []) for s in self.slices)
        return {
            "driver": self.driver,
            "source_node": self.node,
            "slices_per_node": len(self.slices),
            "devices_per_node": len(devices),
            "counter_sets_per_node": counter_sets,
            "partitioned": any(d.get("consumesCounters") for d in devices),
            "units_per_node": self.units,
        }


def units(slices: list[dict]) -> int:
    """Devices a node with ``slices`` can certainly hold at once, one per claim: every device that consumes no
    counter, plus one per shared counter set (any one device fits its set; partitions may fit more). The
    classic extended resource of the same fleet gets this count, so both workloads ask for the same room."""
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    counter_sets = sum(len(s["spec"].get("sharedCounters") or []) for s in slices)
    return sum(1 for d in devices if not d.get("consumesCounters")) + counter_sets


def unfit(mirror: Mirror, variants: tuple[str, ...], selector: str = "") -> dict[str, str]:
    """``{workload: reason}`` for each workload of the bench that does not fit ``mirror``'s device model (the
    report says so instead of a zero): of ``variants`` (the requested DRA variants), ``cel`` without
    ``selector`` (the reference selector names attributes this driver may not publish) and ``match-attribute``
    (pods are sized for pairs on one ``resource.kubernetes.io/pcieRoot``); ``partitions`` when no device
    consumes shared counters (KEP-4815: nothing to partition; a partitioned model runs them through ``cel``)."""
    devices = [d for s in mirror.slices for d in s["spec"].get("devices") or []]
    out = {}
    if "cel" in variants and not selector:
        out["cel"] = "no --mirror-selector given (the reference driver's selector names its own attributes)"
    if "match-attribute" in variants:
        roots = [(d.get("attributes") or {}).get(workload.PCIE_ROOT) for d in devices]
        why = "pairs on one PCIe root are sized for the reference fleet, not mirrored models"
        out["match-attribute"] = why if any(roots) else f"no device publishes {workload.PCIE_ROOT}"
    if not any(d.get("consumesCounters") for d in devices):
        out["partitions"] = (
            f"{len(devices)} device(s) per node, none consumes shared counters (KEP-4815): the model has no partitions"
        )
    return out


def _node_slices(items: list[dict], driver: str, node: str | None, source: str) -> Mirror:
    mine = [s for s in items if s.get("spec", {}).get("driver") == driver and s["spec"].get("nodeName")]
    nodes = sorted({s["spec"]["nodeName"] for s in mine})
    if not nodes:
        raise ConfigError(
            f"no node-local ResourceSlice of driver {driver!r} in {source}",
            field="--mirror-driver",
            fix="name a driver that publishes slices with spec.nodeName (kubectl get resourceslices)",
        )
    node = node or nodes[0]
    chosen = [s for s in mine if s["spec"]["nodeName"] == node]
    if not chosen:
        raise ConfigError(f"driver {driver!r} has no slice on node {node!r}", field="--mirror-node", fix=f"use {nodes}")
    return Mirror(driver, node, tuple(chosen), units(chosen))


def capture(k8s: K8s, driver: str, node: str | None = None) -> Mirror:
    """The slices ``driver`` published for ``node`` (default: the first node, by name, that has some) in the
    cluster of ``k8s``. Raises ConfigError naming the driver and the nodes that have slices."""
    items = [s.raw for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}")]
    return _node_slices(items, driver, node, "the cluster")


def load(path: Path, driver: str, node: str | None = None) -> Mirror:
    """The same from a YAML/JSON file: a List (``kubectl get resourceslices -o yaml``), one slice per document,
    or a list. Raises ConfigError naming the file when it cannot be read or holds no such slice."""
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", field="--mirror", fix="a ResourceSlice List file") from exc
    items = []
    for doc in docs:
        items += doc if isinstance(doc, list) else doc.get("items", [doc]) if isinstance(doc, dict) else []
    return _node_slices(items, driver, node, str(path))


def save(mirror: Mirror, path: Path) -> None:
    """Write the mirrored slices as a ResourceSliceList JSON file (what :func:`load` reads)."""
    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "items": list(mirror.slices)}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def check_gates(mirror: Mirror, feature_gates: str) -> None:
    """Raise ConfigError when the slices use shared counters and the cluster would run default gates: the API
    server would drop those fields (DRAPartitionableDevices is alpha in 1.34) and the mirror would lie."""
    if mirror.describe()["counter_sets_per_node"] and feature_gates != "all":
        raise ConfigError(
            f"the slices of {mirror.driver} on {mirror.node} use shared counters (partitionable devices)",
            field="--feature-gates",
            fix="run the mirror with --feature-gates all (DRAPartitionableDevices)",
        )


def fake_slices(mirror: Mirror, fake_node: str, bench_id: str, owner_uid: str = "") -> list[dict]:
    """The mirror's slices for one fake node: spec copied, ``nodeName`` = ``fake_node``, pool ``i`` of the
    source renamed ``<fake_node>-<i>``, names ``mirror-<fake_node>-<j>``, labelled with the bench ID; with
    ``owner_uid`` (the Node's UID) owned by that Node, as the kubelet plugin helper makes them."""
    pools = {name: i for i, name in enumerate(sorted({s["spec"]["pool"]["name"] for s in mirror.slices}))}
    out = []
    for j, source in enumerate(mirror.slices):
        spec = copy.deepcopy(source["spec"])
        for key in NODE_LOCAL_ONLY:
            spec.pop(key, None)
        spec["nodeName"] = fake_node
        spec["pool"]["name"] = f"{fake_node}-{pools[source['spec']['pool']['name']]}"
        meta: dict = {"name": f"mirror-{fake_node}-{j}", "labels": {workload.BENCH_LABEL: bench_id}}
        if owner_uid:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": fake_node, "uid": owner_uid, "controller": True}
            ]
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec})
    return out


def publish(
    k8s: K8s, mirror: Mirror, fake_nodes: list[str], bench_id: str, owner_uids: dict[str, str] | None = None
) -> int:
    """Create the mirrored slices of every fake node that has none yet (8 in flight; ``owner_uids``: {node:
    UID} to make them owned by their Node); returns the slice count of the driver afterwards. Raises the API
    error of a failed create (e.g. a field the cluster refuses)."""
    uids = owner_uids or {}
    have = {
        s.raw["spec"].get("nodeName") for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={mirror.driver}")
    }
    todo = [
        s for node in fake_nodes if node not in have for s in fake_slices(mirror, node, bench_id, uids.get(node, ""))
    ]
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mirror")
    try:
        list(pool.map(k8s.create, todo))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return len(k8s.list("ResourceSlice", field_selector=f"spec.driver={mirror.driver}"))


def resolve(cfg, progress=print) -> Mirror | None:
    """The Mirror a :class:`~conformance_tools.bench.config.BenchConfig` asks for (None without ``mirror``):
    from ``mirror_slices`` (a file) or the cluster of ``mirror_kubeconfig``; checked against the feature
    gates. Raises ConfigError (bad source, no slices, shared counters without ``--feature-gates all``)."""
    if not cfg.mirror:
        return None
    node = cfg.mirror_node or None
    if cfg.mirror_slices:
        model = load(Path(cfg.mirror_slices), cfg.mirror, node)
    else:
        from conformance.k8s import kubeconfig  # noqa: PLC0415 - only for a live source

        model = capture(K8s.from_kubeconfig(kubeconfig.resolve(cfg.mirror_kubeconfig or None, None)), cfg.mirror, node)
    check_gates(model, cfg.feature_gates)
    d = model.describe()
    progress(
        f"mirroring {d['driver']} from node {d['source_node']}: {d['slices_per_node']} slice(s), "
        f"{d['devices_per_node']} device(s), {d['counter_sets_per_node']} counter set(s), "
        f"{d['units_per_node']} device(s) at once per fake node"
    )
    return model
