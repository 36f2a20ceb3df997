"""The registry of cluster providers and driver deployers: the session asks it for a factory by name and never
branches on the name itself (design.md §1 "found through one registry").

Two ways in, both open to third parties without editing dra-conformance:

* pytest hooks (conformance/hookspecs.py): a plugin (``-p my.module``, a conftest, or a ``pytest11`` entry
  point) implements ``pytest_dra_cluster_providers()`` and/or ``pytest_dra_driver_deployers()`` returning
  ``{name: factory}``. The shipped ones (conformance/clusters/builtin.py, conformance/drivers/builtin.py) come
  in this way too;
* Python entry points in the groups ``dra_conformance.cluster_providers`` and
  ``dra_conformance.driver_deployers`` (entry point name = registry name, value = ``module:factory``), loaded
  when the name is asked for.

A provider factory is ``(ProviderContext) -> ClusterProvider`` (conformance/core/handles.py); a deployer
factory is ``(DeployContext) -> DriverDeployer`` (conformance/drivers/base.py). Pattern: pluggy/pytest plugin
discovery; importlib.metadata entry points (PyPA entry points specification).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance.core.errors import ConfigError
from conformance.core.handles import ClusterProviderFactory, CreatesCluster
from conformance.core.profile import DEPLOY_KEYS
from conformance.drivers.base import DeclaresProfileKeys, DriverDeployerFactory

PROVIDER_GROUP = "dra_conformance.cluster_providers"
DEPLOYER_GROUP = "dra_conformance.driver_deployers"
LAB_PROVIDERS = ("local", "kind")  # registered by dra-conformance-lab (lab/pyproject.toml)
KINDS = {
    "cluster provider": ("--cluster", PROVIDER_GROUP, "pytest_dra_cluster_providers"),
    "driver deployer": ("--driver-deploy", DEPLOYER_GROUP, "pytest_dra_driver_deployers"),
}


@dataclasses.dataclass
class Entry:
    """One registered name: ``source`` says where it came from (plugin name or entry point); ``load`` returns
    the factory (entry points import their module only then)."""

    name: str
    source: str
    load: Callable[[], Callable[[Any], Any]]


class Registry:
    """Name -> factory for cluster providers and driver deployers. Names are unique per kind: a second
    registration of a name raises ConfigError naming both sources."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}

    # -- filling -------------------------------------------------------------------------------------------
    def _add(self, kind: str, name: Any, load: Callable[[], Callable[[Any], Any]], source: str) -> None:
        hook = KINDS[kind][2]
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"{source} registers a {kind} under {name!r}, not a name",
                source=source,
                fix=f"return {{'my-name': factory}} from {hook}",
            )
        taken = self._entries[kind].get(name)
        if taken is not None and taken.source != source:
            raise ConfigError(
                f"{kind} {name!r} is registered twice: by {taken.source} and by {source}",
                source=source,
                fix="rename one of them or uninstall one of the plugins",
            )
        self._entries[kind][name] = Entry(name, source, load)

    def add_cluster_provider(self, name: str, factory: ClusterProviderFactory, source: str) -> None:
        """Register ``factory(ProviderContext) -> ClusterProvider`` as ``--cluster name``."""
        self._add("cluster provider", name, _checked(factory, "cluster provider", name, source), source)

    def add_driver_deployer(self, name: str, factory: DriverDeployerFactory, source: str) -> None:
        """Register ``factory(DeployContext) -> DriverDeployer`` as ``--driver-deploy name`` / ``deploy.mode``."""
        self._add("driver deployer", name, _checked(factory, "driver deployer", name, source), source)

    def add_hook_result(self, kind: str, result: Any, source: str) -> None:
        """Register every ``{name: factory}`` of one hook implementation's result (``None`` = nothing).
        ``kind``: ``cluster provider`` | ``driver deployer``. Raises ConfigError for another shape."""
        if result is None:
            return
        if not isinstance(result, Mapping):
            raise ConfigError(
                f"{KINDS[kind][2]} returned {type(result).__name__}, not a mapping",
                source=source,
                fix="return {'name': factory, ...}",
            )
        for name, factory in result.items():
            self._add(kind, name, _checked(factory, kind, name, source), source)

    def add_entry_points(self, entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> None:
        """Register the entry points of both groups (default: those installed), loaded on first use."""
        if entry_points is None:
            entry_points = [ep for kind in KINDS for ep in importlib.metadata.entry_points(group=KINDS[kind][1])]
        groups = {group: kind for kind, (_, group, _) in KINDS.items()}
        for ep in entry_points:
            if ep.group in groups:
                self._add(groups[ep.group], ep.name, _loader(ep, groups[ep.group]), f"entry point {ep.value}")

    # -- asking --------------------------------------------------------------------------------------------
    def names(self, kind: str) -> tuple[str, ...]:
        """Registered names of ``kind``, sorted."""
        return tuple(sorted(self._entries[kind]))

    def source(self, kind: str, name: str) -> str:
        """Where ``name`` was registered from (plugin name or entry point)."""
        return self._lookup(kind, name).source

    def check(self, kind: str, name: str) -> None:
        """Raise ConfigError (naming the option, the known names and the fix) when ``name`` is unknown."""
        self._lookup(kind, name)

    def _lookup(self, kind: str, name: str) -> Entry:
        option, group, hook = KINDS[kind]
        entry = self._entries[kind].get(name)
        if entry is None:
            lab = (
                f"{install_hint('dra-conformance-lab')} (it provides the local and kind clusters), or "
                if kind == "cluster provider" and name in LAB_PROVIDERS
                else ""
            )
            raise ConfigError(
                f"unknown {kind} {name!r}",
                source=option,
                fix=f"{lab}use one of {', '.join(self.names(kind)) or '(none registered)'}, or install a "
                f"plugin that registers {name!r} (hook {hook} or entry point group {group}) and "
                "load it (-p MODULE)",
            )
        return entry

    def cluster_provider(self, name: str) -> ClusterProviderFactory:
        """The factory of ``--cluster name``. Raises ConfigError for an unknown name."""
        return self._lookup("cluster provider", name).load()

    def creates_cluster(self, name: str) -> bool:
        """Whether ``--cluster name`` creates its cluster (the run owns it): its factory is marked by
        :func:`conformance.core.handles.creates_cluster`. An unmarked factory (``existing``, most third-party
        ones) counts as reaching a cluster someone else runs: the safe default. Loads the factory; raises
        ConfigError for an unknown name."""
        factory = self.cluster_provider(name)
        return isinstance(factory, CreatesCluster) and factory.creates_cluster is True

    def driver_deployer(self, name: str) -> DriverDeployerFactory:
        """The factory of deploy mode ``name``. Raises ConfigError for an unknown name."""
        return self._lookup("driver deployer", name).load()

    def deploy_modes(self) -> dict[str, frozenset[str]]:
        """Registered deployers beyond the shipped modes -> the profile ``deploy`` keys each declares
        (:class:`~conformance.drivers.base.DeclaresProfileKeys`; none declared: no keys). Loads them."""
        out = {}
        for name in self.names("driver deployer"):
            if name not in DEPLOY_KEYS:
                factory = self.driver_deployer(name)
                out[name] = frozenset(factory.profile_keys) if isinstance(factory, DeclaresProfileKeys) else frozenset()
        return out


def _checked(factory: Any, kind: str, name: Any, source: str) -> Callable[[], Callable[[Any], Any]]:
    if not callable(factory):
        raise ConfigError(
            f"{kind} {name!r} of {source} is {type(factory).__name__}, not a factory",
            source=source,
            fix="register a callable: a class or function taking the context",
        )
    return lambda: factory


def _loader(ep: importlib.metadata.EntryPoint, kind: str) -> Callable[[], Callable[[Any], Any]]:
    def load() -> Callable[[Any], Any]:
        try:
            factory = ep.load()
        except Exception as exc:  # noqa: BLE001 - any import error of a third-party plugin
            raise ConfigError(
                f"{kind} {ep.name!r}: entry point {ep.value} cannot be loaded: {exc}",
                source=ep.group,
                fix="install the package that provides it, or uninstall it",
            ) from None
        return _checked(factory, kind, ep.name, f"entry point {ep.value}")()

    return load


def install_hint(dist: str) -> str:
    """How to add the distribution ``dist`` (``dra-conformance-lab`` / ``dra-conformance-tools``) to this install:
    its wheel, built beside the plugin's by ``make wheels`` in a checkout. Never ``pip install <name>`` from an
    index: these names are not published on PyPI, and a package someone else registers there would run in the
    user's environment (s16 new-user review 6)."""
    wheel = f"dist/{dist.replace('-', '_')}-*.whl"
    how = f"`make wheels` in a dra-conformance checkout: {wheel}; not on PyPI"
    return f"install the {dist} wheel built with this one ({how})"
