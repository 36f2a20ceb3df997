"""Feature-gate modes of the local cluster, derived from the built binary.

``defaults``: no gates set, only ``resource.k8s.io/v1`` (GA, on by default).
``all``: every gate whose name starts with ``DRA`` that the binary knows, plus the DRA-related node gates
(KubeletPodResourcesDynamicResources, KubeletPodResourcesGet, ResourceHealthStatus) and GenericWorkload
when DRAWorkloadResourceClaims exists (it depends on it), all set to true; and ``--runtime-config``
enabling the alpha/beta ``resource.k8s.io`` versions that release serves.
Sources: feature-catalog.md §1.1/§1.2; upstream test-infra dra.jinja "all features" jobs (every "DRA" gate
of kube_features.go); local-cluster.md §3.2 (``kube-apiserver --help`` lists ``Name=true|false (STAGE -
default=...)``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conformance_lab.toolchain import cache

_GATE_LINE = re.compile(r"^\s*(?:[a-z]+:)?([A-Z][A-Za-z0-9]+)=true\|false \(([A-Z]+)[^)]*default=(true|false)\)")
EXTRA_GATES = ("KubeletPodResourcesDynamicResources", "KubeletPodResourcesGet", "ResourceHealthStatus")

# resource.k8s.io versions served but off by default, per minor (feature-catalog.md §1.2).
_EXTRA_RESOURCE_VERSIONS = {
    34: ("v1beta1", "v1beta2", "v1alpha3"),
    35: ("v1beta1", "v1beta2", "v1alpha3"),
    36: ("v1beta1", "v1beta2", "v1alpha3"),
    37: ("v1beta1", "v1beta2", "v1alpha3"),
}

# Workload / PodGroup API (GenericWorkload, needed by DRAWorkloadResourceClaims) per minor: k8s.io/api
# scheduling/v1alpha2 in v0.36; scheduling/v1beta1 (betaAPIGroupVersionsDisabledByDefault) in v0.37.
_WORKLOAD_API = {36: "scheduling.k8s.io/v1alpha2", 37: "scheduling.k8s.io/v1beta1"}


def known_gates(help_text: str) -> dict[str, tuple[str, bool]]:
    """Parse ``--help`` output: gate name -> (stage, default). Stage is ALPHA, BETA, GA or DEPRECATED."""
    gates = {}
    for line in help_text.splitlines():
        m = _GATE_LINE.match(line)
        if m:
            gates[m.group(1)] = (m.group(2), m.group(3) == "true")
    return gates


def binary_gates(apiserver: Path) -> dict[str, tuple[str, bool]]:
    """The gates ``apiserver`` knows (runs ``kube-apiserver --help``). Raises RuntimeError if none parse."""
    proc = subprocess.run([str(apiserver), "--help"], capture_output=True, text=True, timeout=60)
    gates = known_gates(proc.stdout + proc.stderr)
    if not gates:
        raise RuntimeError(f"could not read the feature-gate list from `{apiserver} --help`")
    return gates


def cached_defaults(tag: str) -> dict[str, tuple[str, bool]]:
    """``{gate: (stage, default)}`` of release ``tag`` as the local cluster cached them from ``kube-apiserver
    --help`` (``<cache>/gates/<tag>.json``, written by the cluster's first start); ``{}`` when not cached."""
    try:
        data = json.loads((cache.root() / "gates" / f"{tag}.json").read_text())
        return {k: (str(v[0]), bool(v[1])) for k, v in data["gates"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return {}


def select(mode: str, known: dict[str, tuple[str, bool]]) -> dict[str, bool]:
    """The gates to set for ``mode`` (``defaults`` -> {}; ``all`` -> every DRA gate on)."""
    if mode == "defaults":
        return {}
    chosen = {name: True for name in known if name.startswith("DRA")}
    chosen.update({name: True for name in EXTRA_GATES if name in known})
    if "DRAWorkloadResourceClaims" in chosen and "GenericWorkload" in known:
        chosen["GenericWorkload"] = True
    return dict(sorted(chosen.items()))


def runtime_config(mode: str, k8s_tag: str, gates: dict[str, bool] | None = None) -> str:
    """The ``--runtime-config`` value for ``mode`` on release ``k8s_tag`` (``v1.35.4``); "" for defaults.
    With GenericWorkload in ``gates`` it also enables the Workload/PodGroup API of that release."""
    if mode == "defaults":
        return ""
    minor = int(k8s_tag.lstrip("v").split(".")[1])
    versions = _EXTRA_RESOURCE_VERSIONS.get(minor, _EXTRA_RESOURCE_VERSIONS[max(_EXTRA_RESOURCE_VERSIONS)])
    parts = [f"resource.k8s.io/{v}=true" for v in versions]
    if (gates or {}).get("GenericWorkload") and minor in _WORKLOAD_API:
        parts.append(f"{_WORKLOAD_API[minor]}=true")
    return ",".join(parts)


def served_versions(mode: str, k8s_tag: str) -> list[str]:
    """resource.k8s.io versions the apiserver is expected to serve in ``mode`` (v1 first)."""
    extra = [
        part.split("=")[0].split("/")[1]
        for part in runtime_config(mode, k8s_tag).split(",")
        if part.startswith("resource.k8s.io/")
    ]
    return ["v1", *extra]


def flag_value(gates: dict[str, bool]) -> str:
    """``A=true,B=false`` for --feature-gates (sorted)."""
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))
