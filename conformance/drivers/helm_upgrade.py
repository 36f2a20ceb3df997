"""The Helm deployer's upgrade lane (:class:`conformance.core.handles.UpgradesDriver`): the profile names the
driver's previous version N-1 under ``upgrade_from`` of its helm deploy block; the handle puts N-1 in place of
the deployed version N with ``helm upgrade`` of the same release (its chart, values and images) and upgrades it
to N again the same way, as an operator upgrading a driver does.

``upgrade_from`` keys: ``name`` (how reports call N-1, e.g. ``dra-example-driver v0.3.0``), and any of
``chart``, ``version``, ``images``, ``set`` (replace N's), ``values`` (merged over N's, mappings key by key);
``downgrade: false`` declares that the driver does not support going back from N to N-1 (the downgrade lane,
suites/disruptive/test_driver_downgrade.py, is then skipped and the report lists ``downgrade`` as not claimed).
Example (fixtures/drivers/dra-example-driver.yaml)::

    upgrade_from:
      name: dra-example-driver v0.3.0
      chart: {go_module: dra-example-driver-previous, path: deployments/helm/dra-example-driver}
      images: [dra-example-driver-previous]

Source: KEP-4381 (a driver upgrade must not disturb prepared claims: unprepare works from the driver's own
state); Helm ``helm upgrade`` of a release (DaemonSet RollingUpdate replaces the plugin pods node by node).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from conformance.core import errors
from conformance.drivers.daemonset_plugin import DaemonSetDriver
from conformance.drivers.readiness import await_daemonsets, registered_sockets
from conformance.k8s import waits
from conformance.k8s.client import K8s

UPGRADE_KEYS = frozenset({"name", "chart", "version", "images", "set", "values", "downgrade"})
REPLACED = ("chart", "version", "images", "set")


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: mappings key by key (recursively), anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def previous_spec(
    deploy: Mapping[str, Any], field: str = "deploy.upgrade_from", source: str = ""
) -> dict[str, Any] | None:
    """The helm deploy spec of the previous version (``deploy`` with ``upgrade_from`` applied, see module
    docstring; ``upgrade_from`` itself dropped), or None when the profile names none. Raises ConfigError naming
    ``source`` (the profile file) and ``field`` for a value that is not a mapping, an unknown key or a missing
    ``name``. Also called when a profile is loaded (:func:`conformance.drivers.profiles.load`), so a bad value
    is refused before any cluster starts."""
    raw = deploy.get("upgrade_from")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise errors.ConfigError(
            f"upgrade_from must be a mapping with a name, got {raw!r}",
            source=source,
            field=field,
            fix="upgrade_from: {name: 'my-driver v1.2.0', chart: ..., values: {...}, images: [...]}",
        )
    unknown = sorted(set(raw) - UPGRADE_KEYS)
    if not isinstance(raw.get("downgrade", True), bool):
        raise errors.ConfigError(
            f"upgrade_from.downgrade must be true or false, got {raw['downgrade']!r}",
            source=source,
            field=field,
            fix="downgrade: false (the driver does not support N -> N-1), or leave it out",
        )
    if unknown:
        raise errors.ConfigError(
            f"unknown upgrade_from key(s) {unknown}",
            source=source,
            field=field,
            fix=f"use {', '.join(sorted(UPGRADE_KEYS))}",
        )
    spec = {k: v for k, v in deploy.items() if k != "upgrade_from"}
    spec.update({k: raw[k] for k in REPLACED if k in raw})
    spec["values"] = merge(spec.get("values") or {}, raw.get("values") or {})
    return spec


def _registered_again(before: set[str], now: set[str]) -> bool:
    """A kubelet holds a registration socket it did not hold before (a plugin with per-instance sockets,
    ``<driver>-<pod UID>-reg.sock``, as the kubeletplugin library names them for rolling updates), or, for a
    plugin that reuses its socket path, every socket it held before again (and at least one)."""
    return bool(now - before) or (bool(now) and before <= now)


def await_rollout(
    k8s: K8s,
    driver: str,
    namespace: str,
    before: Mapping[str, set[str] | None],
    timeout: float,
    logs: Callable[[], dict[str, str]] | None = None,
) -> None:
    """After ``helm upgrade --install``: every DaemonSet of ``namespace`` runs its current generation Ready on
    every node (``helm --wait`` accepts ``maxUnavailable`` pods still old or starting), then every kubelet of
    ``before`` (:func:`readiness.registered_sockets` read before the upgrade; None: metrics unreadable, not
    awaited) holds a registration socket it did not hold then, or again every one it held then (the replaced
    plugin pods registered again, KEP-4381 plugin registration). Raises DriverNotReady naming the nodes and
    the pods' logs."""
    sets = [(namespace, ds.name) for ds in k8s.list("DaemonSet", namespace)]
    await_daemonsets(k8s, driver, sets, timeout=timeout)
    nodes = [n for n, seen in before.items() if seen is not None]
    missing: list[str] = []

    def registered() -> bool:
        now = registered_sockets(k8s, nodes)
        missing[:] = [n for n in nodes if not _registered_again(before[n] or set(), now[n] or set())]
        return not missing

    if nodes and not waits.poll(registered, timeout=timeout, interval=1.0):
        tails = "".join(
            f"\n--- {k} ---\n" + "\n".join(v.splitlines()[-15:]) for k, v in (logs() if logs else {}).items()
        )
        raise errors.DriverNotReady(driver, f"the plugin registrations again on the kubelets of {missing}", tails)


@dataclasses.dataclass
class HelmDriver(DaemonSetDriver):
    """A Helm-deployed driver (implements :class:`conformance.core.handles.UpgradesDriver`, and RestartsPlugin
    through :class:`~conformance.drivers.daemonset_plugin.DaemonSetDriver`): ``install(spec)``
    runs ``helm upgrade --install`` of a deploy spec and waits until the driver is ready (the deployer's);
    ``current``: the deployed version's spec; ``previous``: N-1's (None: the profile names none);
    ``at_previous``: whether N-1 is what runs now."""

    install: Callable[[Mapping[str, Any]], None] | None = None
    current: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    previous: Mapping[str, Any] | None = None
    previous_name: str = ""
    at_previous: bool = False
    downgrade: bool = True  # upgrade_from.downgrade: false -> the driver does not support N -> N-1

    def can_upgrade(self) -> tuple[bool, str]:
        """``(able, evidence)``: able when the profile names a previous version (``upgrade_from``)."""
        if self.install is None:
            return False, "the helm handle of this process cannot run helm (attached without its deployer)"
        if self.previous is None:
            return False, f"profile {self.profile.name} names no previous version (helm deploy block: upgrade_from)"
        return True, f"helm upgrade of the release from {self.previous_name} to {self.version or 'the profile chart'}"

    def can_downgrade(self) -> tuple[bool, str]:
        """``(able, evidence)`` of the downgrade lane: able when it can upgrade (:meth:`can_upgrade`) and the
        profile does not declare downgrade unsupported (``upgrade_from.downgrade: false``)."""
        able, why = self.can_upgrade()
        if not able:
            return able, why
        if not self.downgrade:
            return False, (
                f"profile {self.profile.name} declares that the driver does not support downgrade from "
                f"{self.version or 'the profile chart'} to {self.previous_name} (upgrade_from.downgrade: false)"
            )
        return True, f"helm upgrade of the release from {self.version or 'the profile chart'} to {self.previous_name}"

    def install_previous(self) -> None:
        """``helm upgrade`` the release to the previous version and wait until it is ready. Raises
        RuntimeError when there is none, DriverNotReady naming helm's output when it does not come up."""
        able, why = self.can_upgrade()
        if not able:
            raise RuntimeError(why)
        self.at_previous = True
        self.install(self.previous)

    def upgrade_driver(self) -> None:
        """``helm upgrade`` the release to the deployed version and wait until it is ready; nothing to do when
        the previous version was never installed. Raises DriverNotReady naming helm's output."""
        if not self.at_previous or self.install is None:
            return
        self.install(self.current)
        self.at_previous = False
