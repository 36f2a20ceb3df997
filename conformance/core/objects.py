"""A thin view over a Kubernetes object dict that keeps every field (no model drops unknown fields).

``Obj(raw)`` gives ``.kind``, ``.name``, ``.namespace``, ``.uid``, ``.labels``, attribute access with
snake_case names mapped to camelCase keys (``claim.status.reserved_for``), ``.get("status.allocation")``
and ``.describe()`` (YAML, for assertion messages).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import yaml


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def wrap(value: Any) -> Any:
    """Wrap dicts as :class:`Node` and lists element-wise; leave scalars alone."""
    if isinstance(value, dict):
        return Node(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


class Node:
    """Read-only attribute view over a nested dict. Missing keys read as ``None``."""

    __slots__ = ("raw",)
    __hash__ = None  # mutable dict view: equal by content, so not hashable (as before, now explicit)

    def __init__(self, raw: dict) -> None:
        object.__setattr__(self, "raw", raw)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raw = object.__getattribute__(self, "raw")
        key = name if name in raw else _camel(name)
        return wrap(raw.get(key))

    def __getitem__(self, key: str) -> Any:
        return wrap(self.raw[key])

    def __contains__(self, key: str) -> bool:
        return key in self.raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __bool__(self) -> bool:
        return bool(self.raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and self.raw == other.raw

    def get(self, path: str, default: Any = None) -> Any:
        """Value at a dotted path (``"status.allocation.devices"``), raw (unwrapped); ``default`` if absent."""
        cur: Any = self.raw
        for part in path.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
                cur = cur[int(part)]
            else:
                return default
        return cur

    def to_dict(self) -> dict:
        """A deep copy of the underlying dict."""
        return copy.deepcopy(self.raw)


class Obj(Node):
    """A whole Kubernetes object (``apiVersion``, ``kind``, ``metadata``, ...)."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return self.raw.get("kind", "")

    @property
    def api_version(self) -> str:
        return self.raw.get("apiVersion", "")

    @property
    def name(self) -> str:
        return self.raw.get("metadata", {}).get("name", "")

    @property
    def namespace(self) -> str:
        return self.raw.get("metadata", {}).get("namespace", "") or ""

    @property
    def uid(self) -> str:
        return self.raw.get("metadata", {}).get("uid", "")

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.raw.get("metadata", {}).get("labels") or {})

    @property
    def resource_version(self) -> str:
        return self.raw.get("metadata", {}).get("resourceVersion", "")

    # DRA shortcuts used by suites
    @property
    def allocation(self) -> Node | None:
        """``status.allocation`` of a ResourceClaim (None when not allocated)."""
        return wrap(self.get("status.allocation"))

    @property
    def results(self) -> list[Node]:
        """``status.allocation.devices.results`` of a ResourceClaim (empty when not allocated)."""
        return wrap(self.get("status.allocation.devices.results") or [])

    @property
    def allocation_node_names(self) -> list[str]:
        """Node names a ResourceClaim's ``status.allocation.nodeSelector`` names exactly (``matchFields``
        ``metadata.name`` ``In`` values, every term; sorted, repeated names once; [] when none). The
        allocator pins node-local devices this way (resource.k8s.io/v1 AllocationResult.nodeSelector)."""
        names = set()
        for term in self.get("status.allocation.nodeSelector.nodeSelectorTerms") or []:
            for field in term.get("matchFields") or []:
                if field.get("key") == "metadata.name" and field.get("operator") == "In":
                    names.update(field.get("values") or [])
        return sorted(names)

    @property
    def reserved_for(self) -> list[Node]:
        """``status.reservedFor`` of a ResourceClaim (consumers with ``name``, ``uid``)."""
        return wrap(self.get("status.reservedFor") or [])

    @property
    def phase(self) -> str:
        """``status.phase`` of a Pod or Namespace ("" when absent)."""
        return self.get("status.phase", "") or ""

    @property
    def ref(self) -> str:
        """``Kind ns/name`` (or ``Kind name`` when cluster-scoped), for messages."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def describe(self, status_only: bool = False) -> str:
        """YAML of the object without managedFields (or of ``status`` only), for assertion messages."""
        raw = copy.deepcopy(self.raw)
        raw.get("metadata", {}).pop("managedFields", None)
        if status_only:
            raw = {"ref": self.ref, "status": raw.get("status")}
        return yaml.safe_dump(raw, sort_keys=False, default_flow_style=False)

    def __repr__(self) -> str:
        return f"<{self.ref}>"


def as_dict(obj: Obj | dict) -> dict:
    """The raw dict of an :class:`Obj` or a plain dict."""
    return obj.raw if isinstance(obj, Node) else obj
