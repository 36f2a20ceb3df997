"""The Kubernetes client wrapper: one explicit instance per cluster, raw dicts in and :class:`Obj` out.

No hidden global client: build one with :meth:`K8s.from_kubeconfig` and pass it around (the ``k8s``
fixture). Every failure is an :class:`~conformance.core.errors.ApiError` subclass carrying the server Status;
only transient errors are resent (connection reset, 429, 5xx: :mod:`.retries`), never states. A 409 Conflict
(stale resourceVersion) is never resent unchanged: :meth:`K8s.replace` raises it, and :meth:`K8s.update`
re-reads the object and re-applies the change (client-go ``retry.RetryOnConflict``).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import config as kconfig
from kubernetes.client import ApiClient

from conformance.core import errors
from conformance.core.objects import Obj, as_dict
from conformance.k8s import kubeconfig, wire
from conformance.k8s.resources import Resource, for_object, resource
from conformance.k8s.retries import retry_conflict, retry_transient


class K8s:
    """A Kubernetes API client over one :class:`kubernetes.client.ApiClient`.

    ``request_timeout``: seconds for a plain request. ``guard_run_id``: when set, deleting or patching a
    cluster-scoped DRA object (DeviceClass, ResourceSlice, DeviceTaintRule) or a Namespace that does not carry
    this run's label raises :class:`~conformance.core.errors.ConfigError` (the write guard, design.md §6).
    """

    GUARDED_KINDS = ("DeviceClass", "ResourceSlice", "DeviceTaintRule", "Namespace")

    def __init__(
        self,
        api: ApiClient,
        *,
        request_timeout: float = 30.0,
        guard_run_id: str = "",
        versions: dict[str, str] | None = None,
    ) -> None:
        self.api = api
        self.request_timeout = request_timeout
        self.guard_run_id = guard_run_id
        self.versions: dict[str, str] = dict(versions or {})  # kind -> version used when a call names none
        self.kube: kubeconfig.Kubeconfig | None = None  # set by from_kubeconfig: named in messages (discovery.refused)

    def prefer_versions(self, served: dict[str, list[str]]) -> None:
        """Use, for each resource.k8s.io kind the cluster does not serve in v1, its newest served version
        (e.g. DeviceTaintRule in v1alpha3 on 1.34). ``served``: ``{version: [plural...]}`` from discovery."""
        from conformance.k8s.resources import DRA_VERSIONS, TABLE  # noqa: PLC0415

        for kind, (group, _, plural, _) in TABLE.items():
            if group != "resource.k8s.io" or plural in served.get("v1", []):
                continue
            for version in DRA_VERSIONS:
                if plural in served.get(version, []):
                    self.versions[kind] = version
                    break

    def _res(self, kind: str, version: str | None) -> Resource:
        return resource(kind, version or self.versions.get(kind))

    @classmethod
    def from_kubeconfig(cls, path: kubeconfig.Source = None, context: str | None = None, **kwargs: Any) -> K8s:
        """Client for ``path`` and ``context`` resolved by :func:`.kubeconfig.resolve` (None: ``$KUBECONFIG``,
        then ``~/.kube/config``), or for a resolved :class:`.kubeconfig.Kubeconfig` (``context`` overrides its own).
        Raises ClusterUnavailable naming the file(s), their source and the context when they cannot be loaded."""
        kube = kubeconfig.of(path, context).existing()
        try:
            api = kconfig.new_client_from_config(**kube.client_kwargs(), persist_config=False)
        except Exception as exc:  # the loader raises ConfigException, OSError, TypeError...
            raise errors.ClusterUnavailable(
                f"cannot load kubeconfig {kube.describe()}: {exc}; "
                "pass --kubeconfig PATH [--context NAME] of a reachable cluster"
            ) from exc
        client = cls(api, **kwargs)
        client.kube = kube
        return client

    @property
    def host(self) -> str:
        """The API server URL."""
        return self.api.configuration.host

    # -- raw HTTP ------------------------------------------------------------------------------------
    def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict | None = None,
        body: Any = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: Any = None,
    ) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method, url, headers, body, _ = self.api.param_serialize(
            method,
            path,
            query_params=[(k, v) for k, v in (query or {}).items() if v not in (None, "")],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        resp = self.api.rest_client.request(
            method, url, headers=headers, body=body, _request_timeout=timeout or self.request_timeout
        )
        if stream and resp.status < 400:
            return resp.response
        data = resp.read()
        if resp.status >= 400:
            raise self._error(resp.status, resp.reason, data, f"{method} {urllib.parse.urlsplit(url).path}")
        return data

    @staticmethod
    def _error(status: int, reason: str, data: bytes, request: str) -> errors.ApiError:
        try:
            body = json.loads(data or b"{}")
        except ValueError:
            body = (data or b"").decode(errors="replace")
        if isinstance(body, dict):
            return errors.api_error_for(
                status, body.get("reason") or reason, body.get("message") or reason, body, request
            )
        return errors.api_error_for(status, reason, str(body)[:500], body, request)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[Any, list[str]]:
        """One request to any API path, not retried (verbs the typed methods do not cover: apply patches,
        deletecollection, reads that must show the server's warnings). Returns ``(decoded JSON body or {},
        Warning header texts)``; raises the ApiError kind of the server Status.
        Source: RFC 7234 ``Warning: 299 - "text"`` headers as kube-apiserver sends them (KEP-1693)."""
        resp = self._send(method, path, query=query, body=body, content_type=content_type, stream=True)
        try:
            data, values = resp.data, resp.headers.getlist("Warning")
        finally:
            resp.release_conn()
        return (json.loads(data) if data else {}), wire.warning_texts(values or [])

    def get_raw(self, path: str, query: dict | None = None, *, retry: bool = True) -> str:
        """GET any path (``/metrics``, a node proxy, ``/version``) as text; ``retry=False``: one attempt only."""
        send = retry_transient(self._send) if retry else self._send
        return send("GET", path, query=query).decode(errors="replace")

    def get_json(self, path: str, query: dict | None = None) -> Any:
        """GET any path and decode JSON (discovery documents, /version)."""
        return json.loads(self.get_raw(path, query))

    # -- typed verbs -----------------------------------------------------------------------------------
    @retry_transient
    def get(self, kind: str, name: str, namespace: str | None = None, version: str | None = None) -> Obj:
        """The object ``kind`` ``namespace/name``; raises NotFound."""
        res = self._res(kind, version)
        return Obj(json.loads(self._send("GET", res.path(namespace, name))))

    def exists(self, kind: str, name: str, namespace: str | None = None, version: str | None = None) -> bool:
        """Whether the object exists (NotFound -> False)."""
        try:
            self.get(kind, name, namespace, version)
            return True
        except errors.NotFound:
            return False

    @retry_transient
    def list_with_version(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        version: str | None = None,
    ) -> tuple[list[Obj], str]:
        """``(items, resourceVersion)``; ``namespace=None`` lists every namespace. Items get kind/apiVersion."""
        res = self._res(kind, version)
        data = json.loads(
            self._send(
                "GET", res.path(namespace), query={"labelSelector": label_selector, "fieldSelector": field_selector}
            )
        )
        items = []
        for item in data.get("items") or []:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", res.api_version)
            items.append(Obj(item))
        return items, data.get("metadata", {}).get("resourceVersion", "")

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        version: str | None = None,
    ) -> list[Obj]:
        """The matching objects (see :meth:`list_with_version`)."""
        return self.list_with_version(
            kind, namespace, label_selector=label_selector, field_selector=field_selector, version=version
        )[0]

    def create(self, obj: Obj | dict, *, namespace: str | None = None) -> Obj:
        """Create ``obj`` (a complete object with apiVersion/kind) and return what the server stored.

        Raises AlreadyExists, Invalid (see ``.causes``), Forbidden, NotFound (namespace or type).
        """
        raw = as_dict(obj)
        res = for_object(raw)
        ns = namespace or raw.get("metadata", {}).get("namespace")
        attempts = [0]

        @retry_transient
        def once() -> Obj:
            attempts[0] += 1
            try:
                return Obj(json.loads(self._send("POST", res.path(ns), body=raw)))
            except errors.AlreadyExists:
                name = raw.get("metadata", {}).get("name")
                if attempts[0] > 1 and name:  # an earlier attempt may have succeeded before a reset
                    existing = self.get(res.kind, name, ns, res.version)
                    if existing.labels == (raw.get("metadata", {}).get("labels") or {}):
                        return existing
                raise

        return once()

    @retry_transient
    def replace(self, obj: Obj | dict, subresource: str = "") -> Obj:
        """PUT ``obj`` (with its resourceVersion) and return what the server stored.

        Raises Conflict at once when the resourceVersion is stale (resending the same body cannot succeed:
        re-read and re-apply, or use :meth:`update`), Invalid, NotFound.
        """
        raw = as_dict(obj)
        res = for_object(raw)
        meta = raw["metadata"]
        self._check_guard(res, meta["name"], meta.get("namespace"))
        return Obj(json.loads(self._send("PUT", res.path(meta.get("namespace"), meta["name"], subresource), body=raw)))

    def update(
        self,
        kind: str,
        name: str,
        change: Callable[[Obj], Obj | dict],
        namespace: str | None = None,
        *,
        subresource: str = "",
        version: str | None = None,
    ) -> Obj:
        """Read the object, PUT ``change(current)``, and on 409 Conflict read it again and re-apply ``change``
        to the fresh copy (up to 5 attempts; client-go ``retry.RetryOnConflict``). ``change`` must be a pure
        function of the object it is given (it may be called several times) and return the whole object.

        Returns the stored object; raises Conflict when every attempt conflicted, NotFound, Invalid.
        """

        @retry_conflict
        def once() -> Obj:
            return self.replace(change(self.get(kind, name, namespace, version)), subresource)

        return once()

    @retry_transient
    def patch(
        self,
        kind: str,
        name: str,
        patch: dict | list,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str = "",
        version: str | None = None,
    ) -> Obj:
        """PATCH with ``patch_type`` ``merge`` | ``strategic`` | ``json``; returns the patched object."""
        res = self._res(kind, version)
        self._check_guard(res, name, namespace)
        ctype = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[patch_type]
        return Obj(
            json.loads(self._send("PATCH", res.path(namespace, name, subresource), body=patch, content_type=ctype))
        )

    @retry_transient
    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_seconds: int | None = None,
        propagation: str = "Background",
        version: str | None = None,
    ) -> None:
        """Delete the object (NotFound is raised: callers that don't care catch it)."""
        res = self._res(kind, version)
        self._check_guard(res, name, namespace)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        self._send("DELETE", res.path(namespace, name), body=body)

    def _check_guard(self, res: Resource, name: str, namespace: str | None) -> None:
        if not self.guard_run_id or res.kind not in self.GUARDED_KINDS:
            return
        from conformance.core.names import RUN_LABEL  # noqa: PLC0415 - tiny, pure

        try:
            labels = self.get(res.kind, name, namespace, res.version).labels
        except errors.NotFound:
            return
        if labels.get(RUN_LABEL) != self.guard_run_id:
            raise errors.ConfigError(
                f"refusing to modify {res.kind} {name}: it is not labelled {RUN_LABEL}={self.guard_run_id}",
                source="write guard",
                fix="create the object through the tracker, or use an unguarded client",
            )

    def unguarded(self) -> K8s:
        """A client over the same connection without the write guard (harness-internal use)."""
        return K8s(self.api, request_timeout=self.request_timeout, versions=self.versions)

    # -- watch, logs ---------------------------------------------------------------------------------
    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        timeout_seconds: int = 10,
        version: str | None = None,
    ) -> Iterator[tuple[str, dict]]:
        """Yield ``(type, object dict)`` watch events (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) until the
        server closes the stream after ``timeout_seconds``. Raises Gone (410) for a too-old version, and
        connection errors as they come (callers resume from their last resourceVersion).
        """
        res = self._res(kind, version)
        resp = self._send(
            "GET",
            res.path(namespace),
            query={
                "watch": "true",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "timeoutSeconds": str(int(timeout_seconds)),
            },
            stream=True,
            timeout=(10, timeout_seconds + 10),
        )
        try:
            yield from wire.watch_events(resp.stream(amt=None, decode_content=False))
        finally:
            resp.release_conn()

    def logs(
        self,
        pod: Obj | str,
        namespace: str | None = None,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
        retry: bool = True,
    ) -> str:
        """The log text of one container of a pod (through the API server's kubelet proxy).
        ``retry=False`` gives up on the first error (callers with another source of the log)."""
        name = pod.name if isinstance(pod, Obj) else pod
        ns = pod.namespace if isinstance(pod, Obj) else namespace

        def once() -> str:
            return self._send(
                "GET",
                resource("Pod").path(ns, name, "log"),
                query={
                    "container": container,
                    "tailLines": tail_lines,
                    "previous": "true" if previous else None,
                },
            ).decode(errors="replace")

        return retry_transient(once)() if retry else once()
