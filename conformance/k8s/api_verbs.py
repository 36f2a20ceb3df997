"""API verbs beyond the client's typed methods: server-side apply, all four patch types, deletecollection,
status writes, a re-reading update (RetryOnConflict), reads that return the server's ``Warning`` headers, a
watch that collects event types, and "expect this create/update to be refused".

Every request goes through :meth:`conformance.k8s.client.K8s.request` or the typed verbs.
Sources: Kubernetes API conventions (PATCH content types ``application/apply-patch+yaml``,
``application/json-patch+json``, ``application/merge-patch+json``, ``application/strategic-merge-patch+json``;
``DELETE`` on a collection; ``Warning: 299 - "..."`` headers, KEP-1693); client-go ``RetryOnConflict``;
upstream test/e2e/dra "CRUD Tests" (conformance, v1.35).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable

from conformance.core import timeouts
from conformance.core.errors import ApiError
from conformance.core.objects import Obj
from conformance.k8s.builders.edits import with_field, with_label
from conformance.k8s.client import K8s
from conformance.k8s.resources import for_object, resource

FIELD_MANAGER = "dra-conformance"


def _version(obj: Obj) -> str:
    return obj.api_version.rsplit("/", 1)[-1]


def apply(k8s: K8s, obj: Obj, *, field_manager: str = FIELD_MANAGER, subresource: str = "") -> Obj:
    """Server-side apply ``obj`` (apiVersion, kind, name, namespace and the fields this manager owns) with
    ``force=true``; returns the stored object. Raises the ApiError kind of the server Status."""
    raw = obj.to_dict()
    meta = raw["metadata"]
    body, _ = k8s.request(
        "PATCH",
        for_object(raw).path(meta.get("namespace"), meta["name"], subresource),
        query={"fieldManager": field_manager, "force": "true"},
        body=json.dumps(raw),
        content_type="application/apply-patch+yaml",
    )
    return Obj(body)


def patch(k8s: K8s, obj: Obj, patch_type: str, body, *, subresource: str = "") -> Obj:
    """PATCH ``obj`` with ``patch_type`` ``json`` | ``merge`` | ``strategic`` | ``apply`` (``body`` is then the
    applied configuration, an Obj or dict); returns the stored object."""
    if patch_type == "apply":
        return apply(k8s, body if isinstance(body, Obj) else Obj(body), subresource=subresource)
    return k8s.patch(
        obj.kind,
        obj.name,
        body,
        obj.namespace or None,
        patch_type=patch_type,
        subresource=subresource,
        version=_version(obj),
    )


def replace_relabelled(k8s: K8s, obj: Obj, key: str, value: str) -> Obj:
    """PUT ``obj`` with label ``key=value`` through :meth:`K8s.update`, which re-reads and re-applies the
    label on 409 Conflict (client-go RetryOnConflict): controllers may write an object (e.g. DeviceTaintRule
    status from 1.35) between our read and our update. Raises Conflict when every attempt conflicted."""
    return k8s.update(
        obj.kind,
        obj.name,
        lambda current: with_label(current, key, value),
        obj.namespace or None,
        version=_version(obj),
    )


def replace_status(k8s: K8s, obj: Obj, status: dict) -> Obj:
    """PUT ``obj`` with ``status`` to its ``/status`` subresource; returns the stored object."""
    return k8s.replace(with_field(obj, "status", status), subresource="status")


def delete_collection(
    k8s: K8s, kind: str, namespace: str | None, label_selector: str, version: str | None = None
) -> None:
    """``DELETE`` the collection of ``kind`` matching ``label_selector`` (deletecollection verb)."""
    k8s.request("DELETE", resource(kind, version).path(namespace), query={"labelSelector": label_selector})


def get_with_warnings(
    k8s: K8s, kind: str, name: str | None, namespace: str | None, version: str
) -> tuple[dict, list[str]]:
    """GET ``kind`` (one object, or the list when ``name`` is None) at ``version``; ``(body, warnings)``."""
    return k8s.request("GET", resource(kind, version).path(namespace, name))


def watch_types(
    k8s: K8s,
    kind: str,
    namespace: str | None,
    *,
    label_selector: str,
    resource_version: str,
    action: Callable[[], None],
    want: Iterable[str],
    timeout: float = timeouts.API_SHORT,
    version: str | None = None,
) -> list[tuple[str, str]]:
    """Run ``action`` and collect ``(event type, object name)`` of ``kind`` from a watch started at
    ``resource_version`` until every type in ``want`` was seen or ``timeout`` (scaled) passed; bounded."""
    wanted = set(want)
    seen: list[tuple[str, str]] = []
    action()
    deadline = time.monotonic() + timeouts.scaled(timeout)
    rv = resource_version
    while time.monotonic() < deadline and not wanted <= {t for t, _ in seen}:
        for etype, raw in k8s.watch(
            kind,
            namespace,
            resource_version=rv,
            label_selector=label_selector,
            timeout_seconds=max(1, int(deadline - time.monotonic())),
            version=version,
        ):
            rv = raw.get("metadata", {}).get("resourceVersion", rv)
            if etype in ("ADDED", "MODIFIED", "DELETED"):
                seen.append((etype, raw.get("metadata", {}).get("name", "")))
            if wanted <= {t for t, _ in seen}:
                break
    return seen


def refused(write: Callable[[], Obj]) -> ApiError:
    """Call ``write`` (a tracker.create / update lambda) and return the ApiError it raised.

    Raises AssertionError showing the stored object when the server accepted it (the tracker still owns it).
    """
    try:
        stored = write()
    except ApiError as exc:
        return exc
    raise AssertionError(f"the API server accepted what it must refuse:\n{stored.describe()}")


def causes(exc: ApiError) -> list[tuple[str, str]]:
    """``[(field, reason)]`` of an Invalid error's Status causes (``reason`` e.g. ``FieldValueTooMany``)."""
    return [(c.get("field", ""), c.get("reason", "")) for c in exc.causes]
