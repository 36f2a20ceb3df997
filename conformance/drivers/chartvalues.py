"""Chart values a deploy takes from the harness's environment (profile key ``env_values``, modes ``helm`` and
``manifests`` with a chart): ``{ENV_VAR: dotted.value.path}``. A variable that is set and not empty sets that
value; an unset one leaves the chart's default. This is how a run's ``DRA_REFERENCE_FAULTS`` (host mode: the
plugin's own environment) reaches a driver deployed as a DaemonSet: the reference chart's ``faults`` value
becomes the container's ``DRA_REFERENCE_FAULTS`` env (reference_driver/deploy/chart/templates/daemonset.yaml).
A string value holding ``{node_name}`` gets the name of the cluster's one node (:func:`fill_node_name`): for a
chart that only takes a fixed node name, such as dra-driver-cpu's ``args.hostnameOverride`` on a node whose
hostname is not its node name (local nodes have their own, so its profile leaves it unset). Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.core import errors


def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` deep-merged with ``extra`` (``extra`` wins; nested mappings merge). Neither is changed."""
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def from_env(env_values: Any, environ: Mapping[str, str], source: str = "deploy.env_values") -> dict[str, Any]:
    """The nested values ``env_values`` (``{ENV_VAR: "a.b.c"}``) gives for ``environ``: ``{"a": {"b": {"c":
    value}}}`` for every variable set and not empty. Raises ConfigError naming ``source`` for a value that is
    not a mapping of variable names to dotted paths."""
    if not env_values:
        return {}
    if not isinstance(env_values, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v and all(v.split(".")) for k, v in env_values.items()
    ):
        raise errors.ConfigError(
            f"{env_values!r} is not a mapping of environment variables to chart value paths",
            field=source,
            fix="env_values: {DRA_REFERENCE_FAULTS: faults}",
        )
    out: dict[str, Any] = {}
    for var, path in env_values.items():
        value = environ.get(var, "")
        if not value:
            continue
        *parents, leaf = path.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


NODE_NAME = "{node_name}"


def fill_node_name(values: Any, node_names: Sequence[str], path: str = "deploy.values") -> Any:
    """A copy of ``values`` (nested mappings, lists, scalars) with ``{node_name}`` in every string replaced by the
    name of the one node in ``node_names``. A chart that takes a single fixed node name (dra-driver-cpu v0.2.0
    ``args.hostnameOverride``, the ``--hostname-override`` of its hostNetwork pod, needed where a node's hostname
    is not its node name) is right only on a one-node
    cluster, so any other node count raises ConfigError naming the value's dotted path and the node count."""
    if isinstance(values, str):
        if NODE_NAME not in values:
            return values
        if len(node_names) != 1:
            raise errors.ConfigError(
                f"{values!r} names {NODE_NAME}, which is only defined on a one-node cluster; this cluster has "
                f"{len(node_names)} nodes ({', '.join(node_names) or 'none listed'})",
                field=path,
                fix="run on one node (--nodes 1) or drop the placeholder from the profile's values",
            )
        return values.replace(NODE_NAME, node_names[0])
    if isinstance(values, Mapping):
        return {k: fill_node_name(v, node_names, f"{path}.{k}") for k, v in values.items()}
    if isinstance(values, list):
        return [fill_node_name(v, node_names, f"{path}[{i}]") for i, v in enumerate(values)]
    return values


def chart_values(
    deploy: Mapping[str, Any],
    environ: Mapping[str, str],
    image_repo: str | None = None,
    node_names: Sequence[str] = (),
) -> dict:
    """The values a chart is installed or rendered with: the profile's ``values`` (``{node_name}`` filled from
    ``node_names``, the cluster's nodes), then ``env_values`` taken from ``environ``, then ``image.repository``
    from ``--image-repo``. Raises ConfigError (see :func:`from_env`, :func:`fill_node_name`)."""
    own = fill_node_name(deploy.get("values") or {}, list(node_names))
    values = merge(own, from_env(deploy.get("env_values"), environ))
    if image_repo:
        values = merge(values, {"image": {"repository": image_repo}})
    return values
