"""RunConfig: every option of a run, frozen and validated once (design.md §9). Pure: no I/O.

Each option has a converter whose :class:`~conformance.core.errors.ConfigError` names the option, the bad
value and the accepted form. The plugin fills :class:`RunConfig` from pytest options with
:func:`from_options`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from conformance.core.errors import ConfigError
from conformance.core.markers import PROFILE_ORDER

FEATURE_GATE_MODES = ("defaults", "all")
NODE_ACCESS_MODES = ("auto", "none", "privileged-pod")
# HOST[:PORT][/PREFIX] of an image registry, no scheme (``--image-registry``, ``images push --registry``).
REGISTRY_FORM = re.compile(r"^(?:[a-z0-9.-]+|\[[0-9a-f:]+\])(?::\d{1,5})?(?:/[a-z0-9._-]+)*$")


def choice(option: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``; ConfigError naming ``option`` otherwise."""
    if value not in allowed:
        raise ConfigError(f"{value!r} is not accepted", source=option, fix=f"use one of {', '.join(allowed)}")
    return value


def registry_name(option: str, value: Any) -> str:
    """``value`` if it has the shape of a registry name (``local``, ``vendor-operator``); whether such a cluster
    provider or driver deployer is registered is checked by conformance.runner.registry."""
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", value):
        raise ConfigError(
            f"{value!r} is not a provider or deployer name",
            source=option,
            fix="lower-case letters, digits, '.', '_' and '-', e.g. local or helm",
        )
    return value


def registry_host(option: str, value: Any) -> str:
    """``HOST[:PORT][/PREFIX]`` without a trailing slash; ConfigError naming ``option`` and the accepted form."""
    text = str(value).strip().rstrip("/")
    if not REGISTRY_FORM.match(text):
        raise ConfigError(
            f"{value!r} is not HOST[:PORT][/PREFIX] (lower case, no http:// scheme)",
            source=option,
            fix="e.g. 127.0.0.1:5000 or registry.example.com/dra",
        )
    return text


def k8s_minor(option: str, value: str | None, known: tuple[str, ...] = ()) -> str | None:
    """``1.NN`` (a leading ``v`` and a patch are accepted and cut), checked against ``known`` if given."""
    if value in (None, ""):
        return None
    m = re.fullmatch(r"v?(1\.\d+)(\.\d+)?", str(value).strip())
    if not m:
        raise ConfigError(f"{value!r} is not a Kubernetes minor version", source=option, fix="e.g. 1.34")
    if known and m.group(1) not in known:
        raise ConfigError(
            f"Kubernetes {m.group(1)} is not pinned",
            source=option,
            fix=f"use one of {', '.join(known)} (versions.toml)",
        )
    return m.group(1)


def gate_list(option: str, value: Any) -> dict[str, bool]:
    """``Name=true,Other=false`` (kube-apiserver ``--feature-gates`` syntax) as ``{name: bool}``; "" or None
    -> {}. Raises ConfigError naming the first bad item."""
    out: dict[str, bool] = {}
    for item in [i.strip() for i in str(value or "").split(",") if i.strip()]:
        name, eq, state = item.partition("=")
        if not (eq and re.fullmatch(r"[A-Z][A-Za-z0-9]*", name.strip()) and state.strip().lower() in ("true", "false")):
            raise ConfigError(
                f"{item!r} is not a feature gate setting",
                source=option,
                fix="Name=true or Name=false, comma-separated, e.g. DRAPrioritizedList=true,DRADeviceTaints=false",
            )
        out[name.strip()] = state.strip().lower() == "true"
    return out


def positive_float(option: str, value: Any) -> float:
    """``value`` as a float > 0."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{value!r} is not a number", source=option, fix="e.g. 1.5") from None
    if out <= 0:
        raise ConfigError(f"{value!r} must be > 0", source=option, fix="e.g. 1 (no scaling) or 2 (twice as long)")
    return out


def node_count(option: str, value: Any) -> int:
    """``value`` as an int in 1..8."""
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{value!r} is not a whole number", source=option, fix="e.g. 2") from None
    if not 1 <= out <= 8:
        raise ConfigError(f"{out} is out of range", source=option, fix="use 1 to 8 nodes")
    return out


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """One run's configuration.

    cluster: a registered cluster provider (local|kind|existing shipped); kubeconfig/context: for ``existing`` (and
    kind); k8s_version: ``1.NN`` or None (default of versions.toml); feature_gates: defaults|all; driver: profile
    name or path; driver_deploy: a registered deployer overriding the profile's deploy mode (None: :func:`deploy_mode`);
    profile: core|standard|full|disruptive; allow_disruptive: required for ``disruptive``; image_repo: registry
    prefix for driver images; report_dir: where run.json and reports go; timeout_scale: multiplier (> 0) for every
    wait; nodes: node count of a local/kind cluster; node_access: auto|none|privileged-pod (the latter is the
    explicit opt-in for existing clusters); run_id: labels every object; keep_cluster: leave a local cluster
    running; cluster_feature_gates: ``Name=true,...`` the admin of an existing cluster states (used for a gate
    the cluster's metrics do not report; only with ``--cluster existing``); kind_name: the kind cluster's name
    (an existing one is reused and left running); allow_install: let ``--driver-deploy`` install a driver on
    a cluster the run does not own (:func:`deploy_mode`); image_registry: ``HOST[:PORT][/PREFIX]`` the test,
    probe and helper pods pull the suite's own images from (pushed there by ``dra-conformance images push``;
    conformance.images.in_registry maps each name), None: the nodes' images or public fallbacks; values: a Helm
    values file for ``--driver-deploy helm`` (helm ``--values``, applied last: it wins over the profile's).
    """

    cluster: str = "local"
    kubeconfig: str | None = None
    context: str | None = None
    k8s_version: str | None = None
    feature_gates: str = "all"
    driver: str = "reference"
    driver_deploy: str | None = None
    profile: str = "standard"
    allow_disruptive: bool = False
    image_repo: str | None = None
    report_dir: str | None = None
    timeout_scale: float = 1.0
    nodes: int = 2
    node_access: str = "auto"
    run_id: str = ""
    keep_cluster: bool = False
    cluster_feature_gates: str = ""
    kind_name: str | None = None
    allow_install: bool = False
    image_registry: str | None = None
    values: str | None = None

    def __post_init__(self) -> None:
        registry_name("--cluster", self.cluster)
        choice("--feature-gates", self.feature_gates, FEATURE_GATE_MODES)
        choice("--profile", self.profile, PROFILE_ORDER)
        choice("--node-access", self.node_access, NODE_ACCESS_MODES)
        if self.driver_deploy is not None:
            registry_name("--driver-deploy", self.driver_deploy)
        if self.profile == "disruptive" and not self.allow_disruptive:
            raise ConfigError(
                "the disruptive profile restarts kubelets and driver plugins",
                source="--profile",
                fix="add --allow-disruptive to confirm, or pick core, standard or full",
            )
        if not self.driver:
            raise ConfigError("no driver given", source="--driver", fix="e.g. --driver reference")
        positive_float("--timeout-scale", self.timeout_scale)
        node_count("--nodes", self.nodes)
        if gate_list("--cluster-feature-gates", self.cluster_feature_gates) and self.cluster != "existing":
            raise ConfigError(
                f"the gates of a --cluster {self.cluster} cluster are known to the harness",
                source="--cluster-feature-gates",
                fix="drop it (use --feature-gates defaults|all), or use it with --cluster existing",
            )
        if self.image_registry is not None:
            registry_host("--image-registry", self.image_registry)
            if self.cluster == "local":  # kind: the nodes pull through it (the lab's kind provider checks it)
                raise ConfigError(
                    f"a --cluster {self.cluster} cluster loads the suite's images itself",
                    source="--image-registry",
                    fix="use it with --cluster existing (nodes that pull from that registry) or --cluster kind "
                    "(127.0.0.1:PORT: kind nodes pull through it), or drop it",
                )
        if self.kind_name and self.cluster != "kind":
            raise ConfigError(
                f"names a kind cluster, but --cluster is {self.cluster}",
                source="--kind-name",
                fix="add --cluster kind, or drop --kind-name",
            )

    def as_dict(self) -> dict:
        """Plain dict (for run.json and the xdist state file)."""
        return dataclasses.asdict(self)


def deploy_mode(cfg: RunConfig, profile_mode: str, *, owned: bool) -> str:
    """The effective deploy mode of a run (issue 22: never touch a customer's driver by accident).

    ``profile_mode``: the profile's ``deploy.mode``; ``owned``: whether the run creates its cluster
    (``Registry.creates_cluster``). On an owned cluster: ``--driver-deploy`` or else the profile's mode. On a
    cluster the run does not own: ``preinstalled`` without ``--driver-deploy`` (whatever the profile says);
    ``--driver-deploy preinstalled``; any other ``--driver-deploy`` only with ``--allow-install``, else a
    ConfigError (exit 4) naming ``--allow-install`` as the fix.
    """
    explicit = cfg.driver_deploy
    if explicit is None:
        return profile_mode if owned else "preinstalled"
    if owned or cfg.allow_install or explicit == "preinstalled":
        return explicit
    raise ConfigError(
        f"{explicit!r} would install a driver on the cluster of --cluster {cfg.cluster}, which this run did not "
        "create (tear-down would remove what it installed)",
        source="--driver-deploy",
        fix="drop --driver-deploy to qualify the driver already installed there (preinstalled), or add "
        "--allow-install to install anyway (refused when the release or objects already exist)",
    )


def refuse_simulated_hardware(requires_hardware: bool, cfg: RunConfig, profile_source: str, *, owned: bool) -> None:
    """ConfigError (exit 4) when a profile that declares ``requires_hardware: true`` (its driver needs real
    devices: GPUs, /dev/dri) would run on a cluster the run creates itself (``owned``:
    ``Registry.creates_cluster``, e.g. ``--cluster local`` or ``kind``), whose nodes have no such hardware: the
    driver would publish nothing and the run would fail for a reason that is not the driver's."""
    if requires_hardware and owned:
        raise ConfigError(
            f"the driver needs real hardware, which the nodes of --cluster {cfg.cluster} (a cluster this run "
            "creates) do not have",
            source=profile_source,
            field="requires_hardware",
            fix="run on the cluster with the hardware: --cluster existing --kubeconfig PATH, or use a profile "
            "whose driver simulates its devices (requires_hardware: false)",
        )


def from_options(options: Mapping[str, Any], *, known_versions: tuple[str, ...] = ()) -> RunConfig:
    """A RunConfig from option values keyed by RunConfig field names (None = default), converting strings
    (``timeout_scale``, ``nodes``, ``k8s_version``). Raises ConfigError for the first bad value."""
    values = {k: v for k, v in options.items() if v is not None and k in RunConfig.__dataclass_fields__}
    if "timeout_scale" in values:
        values["timeout_scale"] = positive_float("--timeout-scale", values["timeout_scale"])
    if "nodes" in values:
        values["nodes"] = node_count("--nodes", values["nodes"])
    if "k8s_version" in values:
        values["k8s_version"] = k8s_minor("--k8s-version", values["k8s_version"], known_versions)
    return RunConfig(**values)
