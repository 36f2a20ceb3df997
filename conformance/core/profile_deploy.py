"""Validation of a driver profile's ``deploy`` mapping, one deploy mode at a time.

Split from :mod:`conformance.core.profile` (the profile schema): which keys a mode takes is
``profile.DEPLOY_KEYS`` (plus modes that plugins register); here the checks each mode needs (a helm chart,
a manifests dir or chart, a host binary, the NRI and test-interface settings of host-mode network drivers).
Every error is a :class:`ConfigError` naming the profile, the field and the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from conformance.core.errors import ConfigError


def _check_deploy_keys(deploy: Mapping, mode: str, src: str, modes: Mapping[str, frozenset[str] | set[str]]) -> None:
    """Every ``deploy`` key must belong to ``mode``: a key of another mode (``chart`` under ``mode: bundled``)
    would be silently ignored by the deployer, so it is an error naming the mode it belongs to."""
    extra = sorted(set(deploy) - set(modes[mode]) - {"mode"})
    if not extra:
        return
    takes = f"deploy mode {mode} takes {', '.join(sorted(modes[mode])) or 'no other keys'}"
    owners = [m for m, keys in modes.items() if extra[0] in keys]
    if owners:
        raise ConfigError(
            f"{extra[0]!r} is a key of deploy mode {' / '.join(owners)}, but deploy.mode is {mode}",
            source=src,
            field=f"deploy.{extra[0]}",
            fix=f"remove {', '.join(extra)} ({takes}) or set deploy.mode: {owners[0]}",
        )
    close = difflib.get_close_matches(extra[0], sorted(modes[mode]), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown field(s) {extra}{hint}", source=src, field=f"deploy.{extra[0]}", fix=takes)


def check_deploy(deploy: Mapping, mode: str, src: str, modes: Mapping[str, frozenset[str] | set[str]]) -> str:
    """Validate one ``deploy`` mapping of ``mode``; returns the mode. Raises ConfigError (field, fix)."""
    if mode not in modes:
        raise ConfigError(
            f"unknown deploy mode {mode!r}",
            source=src,
            field="deploy.mode",
            fix=f"use one of {', '.join(modes)}, or load the plugin that registers {mode!r} (-p MODULE)",
        )
    _check_deploy_keys(deploy, mode, src, modes)
    if mode == "helm" and not deploy.get("chart"):
        raise ConfigError(
            "helm deploy needs a chart",
            source=src,
            field="deploy.chart",
            fix="chart: oci://registry/charts/name or a chart directory",
        )
    if mode == "manifests" and bool(deploy.get("dir")) == bool(deploy.get("chart")):
        raise ConfigError(
            "manifests deploy needs a directory or file of manifests (dir), or a chart to render (chart), not both",
            source=src,
            field="deploy.dir",
            fix="dir: path/ (or bundle.yaml), or chart: path/to/chart",
        )
    if mode == "host" and not isinstance(deploy.get("binary"), Mapping):
        raise ConfigError(
            "host deploy needs binary: {tool: NAME, name: BINARY} or {k8s: NAME}",
            source=src,
            field="deploy.binary",
            fix="binary: {tool: dra-example-driver, name: dra-example-kubeletplugin}",
        )
    if mode == "host":
        _check_netdevs(deploy, src)
    return mode


NETDEV_KINDS = ("ifb", "veth")  # no dummy: not every kernel has it (CONFIG_DUMMY)


def _check_netdevs(deploy: Mapping, src: str) -> None:
    """``deploy.nri`` must be a bool; ``deploy.netdevs`` ``{kind: ifb|veth, count: 1..99}``. Raises ConfigError."""
    net, fix = deploy.get("netdevs", {"count": 1}), "netdevs: {kind: ifb, count: 4}"
    net_ok = isinstance(net, Mapping) and not set(net) - {"kind", "count"}
    count = net.get("count") if net_ok else None
    for field, bad, why in (
        ("nri", not isinstance(deploy.get("nri", False), bool), f"must be true or false, got {deploy.get('nri')!r}"),
        ("netdevs", not net_ok, f"must be a mapping of kind and count, got {net!r}"),
        (
            "netdevs.kind",
            net_ok and net.get("kind", "ifb") not in NETDEV_KINDS,
            f"use one of {', '.join(NETDEV_KINDS)}",
        ),
        ("netdevs.count", not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 99, "1 to 99"),
    ):
        if bad:
            raise ConfigError(f"{why} (netdevs: {net!r})", source=src, field=f"deploy.{field}", fix=fix)
