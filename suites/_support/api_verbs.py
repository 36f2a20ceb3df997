"""API verbs the K8s client does not wrap yet: server-side apply, deletecollection, status writes, a
watch that collects event types, requests that return the server's ``Warning`` headers, and "expect this
create/update to be refused".

Sources: Kubernetes API conventions (PATCH content types ``application/apply-patch+yaml``,
``application/json-patch+json``, ``application/merge-patch+json``, ``application/strategic-merge-patch+json``;
``DELETE`` on a collection; RFC 7234 style ``Warning: 299 - "..."`` headers, KEP-1693); upstream
test/e2e/dra "CRUD Tests" (conformance, v1.35).
Belongs in: conformance/k8s/client.py (verbs) and conformance/k8s/waits (watch_types).
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
from typing import Callable, Iterable

from conformance.api import ApiError, Conflict, Obj
from conformance.core import timeouts
from conformance.k8s.resources import for_object, resource
from suites._support.api_objects import with_label

_WARNING = re.compile(r'^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')
FIELD_MANAGER = "dra-conformance"


def _request(k8s, method: str, path: str, *, query: dict | None = None, body=None,
             content_type: str = "application/json") -> tuple[dict, list[str]]:
    """One raw request; returns ``(decoded JSON body, warning texts)``. Raises the client's ApiError kinds."""
    headers = {"Accept": "application/json", "Content-Type": content_type}
    method, url, headers, payload, _ = k8s.api.param_serialize(
        method, path, query_params=[(k, v) for k, v in (query or {}).items() if v not in (None, "")],
        header_params=headers, body=body, auth_settings=["BearerToken"])
    resp = k8s.api.rest_client.request(method, url, headers=headers, body=payload,
                                       _request_timeout=k8s.request_timeout)
    data = resp.read()
    if resp.status >= 400:
        raise k8s._error(resp.status, resp.reason, data, f"{method} {urllib.parse.urlsplit(url).path}")
    raw_warnings = resp.headers.getlist("Warning")
    warnings = []
    for value in raw_warnings or []:
        for part in re.split(r',(?=\s*\d{3}\s)', value):
            m = _WARNING.match(part)
            warnings.append(m.group(1) if m else part.strip())
    return (json.loads(data) if data else {}), warnings


def apply(k8s, obj: Obj, *, field_manager: str = FIELD_MANAGER, subresource: str = "") -> Obj:
    """Server-side apply ``obj`` (a complete object, possibly partial fields) with ``force=true``."""
    raw = obj.to_dict()
    res = for_object(raw)
    meta = raw["metadata"]
    body, _ = _request(k8s, "PATCH", res.path(meta.get("namespace"), meta["name"], subresource),
                       query={"fieldManager": field_manager, "force": "true"}, body=json.dumps(raw),
                       content_type="application/apply-patch+yaml")
    return Obj(body)


def patch(k8s, obj: Obj, patch_type: str, body, *, subresource: str = "") -> Obj:
    """PATCH ``obj`` with ``patch_type`` ``json`` | ``merge`` | ``strategic`` | ``apply`` (``body`` is then an
    Obj or dict of the applied configuration)."""
    if patch_type == "apply":
        applied = body if isinstance(body, Obj) else Obj(body)
        return apply(k8s, applied, subresource=subresource)
    return k8s.patch(obj.kind, obj.name, body, obj.namespace or None, patch_type=patch_type,
                     subresource=subresource, version=obj.api_version.rsplit("/", 1)[-1])


def replace_relabelled(k8s, obj: Obj, key: str, value: str, *, attempts: int = 5) -> Obj:
    """PUT ``obj`` with label ``key=value``, re-reading it and retrying on 409 Conflict (client-go
    RetryOnConflict): controllers may write an object (e.g. DeviceTaintRule status from 1.35) between our
    read and our update, which is optimistic concurrency working, not an API failure."""
    current = obj
    for attempt in range(attempts):
        try:
            return k8s.replace(with_label(current, key, value))
        except Conflict:
            if attempt == attempts - 1:
                raise
            current = k8s.get(obj.kind, obj.name, obj.namespace or None, obj.api_version.rsplit("/", 1)[-1])
    raise AssertionError("unreachable")


def replace_status(k8s, obj: Obj, status: dict) -> Obj:
    """PUT ``obj`` with ``status`` to its ``/status`` subresource."""
    raw = obj.to_dict()
    raw["status"] = status
    return k8s.replace(Obj(raw), subresource="status")


def delete_collection(k8s, kind: str, namespace: str | None, label_selector: str, version: str | None = None
                      ) -> None:
    """``DELETE`` the collection of ``kind`` matching ``label_selector`` (deletecollection verb)."""
    res = resource(kind, version)
    _request(k8s, "DELETE", res.path(namespace), query={"labelSelector": label_selector})


def get_with_warnings(k8s, kind: str, name: str | None, namespace: str | None, version: str
                      ) -> tuple[dict, list[str]]:
    """GET ``kind`` (one object, or the list when ``name`` is None) at ``version``; ``(body, warnings)``."""
    return _request(k8s, "GET", resource(kind, version).path(namespace, name))


def watch_types(k8s, kind: str, namespace: str | None, *, label_selector: str, resource_version: str,
                action: Callable[[], None], want: Iterable[str], timeout: float = timeouts.API_SHORT,
                version: str | None = None) -> list[tuple[str, str]]:
    """Run ``action`` and collect ``(event type, object name)`` of ``kind`` from a watch started at
    ``resource_version`` until every type in ``want`` was seen or ``timeout`` (scaled) passed; bounded."""
    wanted = set(want)
    seen: list[tuple[str, str]] = []
    action()
    deadline = time.monotonic() + timeouts.scaled(timeout)
    rv = resource_version
    while time.monotonic() < deadline and not wanted <= {t for t, _ in seen}:
        for etype, raw in k8s.watch(kind, namespace, resource_version=rv, label_selector=label_selector,
                                    timeout_seconds=max(1, int(deadline - time.monotonic())), version=version):
            rv = raw.get("metadata", {}).get("resourceVersion", rv)
            if etype in ("ADDED", "MODIFIED", "DELETED"):
                seen.append((etype, raw.get("metadata", {}).get("name", "")))
            if wanted <= {t for t, _ in seen}:
                break
    return seen


def refused(create: Callable[[], Obj]) -> ApiError:
    """Call ``create`` (a tracker.create / update lambda) and return the ApiError it raised.

    Raises AssertionError showing the stored object when the server accepted it (the tracker still owns it).
    """
    try:
        stored = create()
    except ApiError as exc:
        return exc
    raise AssertionError(f"the API server accepted what it must refuse:\n{stored.describe()}")


def causes(exc: ApiError) -> list[tuple[str, str]]:
    """``[(field, reason)]`` of an Invalid error's Status causes (``reason`` e.g. ``FieldValueTooMany``)."""
    return [(c.get("field", ""), c.get("reason", "")) for c in exc.causes]
