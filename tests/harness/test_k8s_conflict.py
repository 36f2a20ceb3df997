"""Unit tests of how the K8s client treats 409 Conflict, against a fake HTTP transport (an in-memory API
server for one DeviceClass with optimistic concurrency): a PUT with a stale resourceVersion is never resent
unchanged, and ``K8s.update`` re-reads and re-applies its change (client-go ``retry.RetryOnConflict``)."""

import json

import pytest

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.client import K8s

PATH = "/apis/resource.k8s.io/v1/deviceclasses/cls"


class _Response:
    def __init__(self, status: int, body: dict) -> None:
        self.status, self.reason, self._data = status, "", json.dumps(body).encode()

    def read(self) -> bytes:
        return self._data


class FakeApiServer:
    """``param_serialize`` + ``rest_client.request`` of kubernetes.client.ApiClient over one stored object.
    ``writer``: called after every GET, to simulate a controller writing between our read and our PUT."""

    def __init__(self, writer=None, fail_first_put_with: int = 0) -> None:
        self.obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "cls", "resourceVersion": "1", "labels": {}},
        }
        self.requests: list[str] = []
        self.writer, self.fail_first_put_with = writer, fail_first_put_with
        self.rest_client = self

    def bump(self, **labels: str) -> None:
        meta = self.obj["metadata"]
        meta["labels"] = {**meta["labels"], **labels}
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def param_serialize(self, method, path, query_params=None, header_params=None, body=None, auth_settings=None):
        return method, "https://fake" + path, header_params, body, None

    def request(self, method, url, headers=None, body=None, _request_timeout=None):
        assert url == "https://fake" + PATH, url
        self.requests.append(method)
        if method == "GET":
            snapshot = json.loads(json.dumps(self.obj))
            if self.writer:
                self.writer(self)
            return _Response(200, snapshot)
        if self.fail_first_put_with:
            code, self.fail_first_put_with = self.fail_first_put_with, 0
            return _Response(code, {"reason": "ServiceUnavailable", "message": "try again"})
        if body["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            return _Response(409, {"reason": "Conflict", "message": "the object has been modified"})
        self.obj = json.loads(json.dumps(body))
        self.bump()
        return _Response(200, self.obj)


def _labelled(obj: Obj, **labels: str) -> dict:
    raw = obj.to_dict()
    raw["metadata"]["labels"] = {**raw["metadata"].get("labels", {}), **labels}
    return raw


def test_replace_with_a_stale_resource_version_raises_conflict_after_one_put():
    server = FakeApiServer()
    k8s = K8s(server)
    stale = k8s.get("DeviceClass", "cls")
    server.bump(controller="wrote")
    with pytest.raises(errors.Conflict):
        k8s.replace(_labelled(stale, mine="x"))
    assert server.requests == ["GET", "PUT"]  # the same body was not resent


def test_update_re_reads_and_re_applies_the_change_after_a_conflict():
    writes = iter([lambda s: s.bump(controller="wrote")])  # one concurrent write, after our first GET

    def writer(server):
        next(writes, lambda _: None)(server)

    server = FakeApiServer(writer=writer)
    updated = K8s(server).update("DeviceClass", "cls", lambda current: _labelled(current, mine="x"))
    assert server.requests == ["GET", "PUT", "GET", "PUT"]
    assert updated.labels == {"controller": "wrote", "mine": "x"}  # the concurrent write is kept


def test_update_raises_conflict_when_every_attempt_conflicts():
    server = FakeApiServer(writer=lambda s: s.bump())
    with pytest.raises(errors.Conflict):
        K8s(server).update("DeviceClass", "cls", lambda current: _labelled(current, mine="x"))
    assert server.requests.count("PUT") == 5


def test_replace_still_retries_transient_server_errors():
    server = FakeApiServer(fail_first_put_with=503)
    k8s = K8s(server)
    stored = k8s.replace(_labelled(k8s.get("DeviceClass", "cls"), mine="x"))
    assert server.requests == ["GET", "PUT", "PUT"] and stored.labels == {"mine": "x"}
