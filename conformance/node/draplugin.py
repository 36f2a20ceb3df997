"""A client of a DRA driver's kubelet plugin service (``DRAPlugin``: NodePrepareResources /
NodeUnprepareResources) over the driver's own unix socket: the calls the kubelet makes, made by the harness
to check driver-contract rules the kubelet path cannot reach (a repeated prepare, an unprepare of a claim the
driver never saw, a claim whose UID does not match the API object).

Sources: k8s.io/kubelet/pkg/apis/dra/v1 ``DRAPlugin`` (same messages in v1beta1; wire methods
``/k8s.io.kubelet.pkg.apis.dra.<version>.DRAPlugin/<Method>``); dra-protocols.md §2: every requested claim UID
gets one entry in the answer's ``claims`` map, a per-claim failure is that entry's ``error`` (the kubelet
reports "NodePrepareResources skipped N ResourceClaims" when entries are missing). The socket is the
``endpoint`` the driver's registration GetInfo advertises, the service version one of its
``supported_versions`` (v1 preferred, like kubelets >= 1.34). Messages are compiled from our own .proto
(``python -m conformance.protos``), like the registration client.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import grpc

from conformance.core import errors
from conformance.node import call_timing, unixsock

PLUGIN_TYPE = "DRAPlugin"
SERVICE_VERSIONS = ("v1", "v1beta1")  # preference order, as the kubelet (>= 1.34) picks
METHOD = "/k8s.io.kubelet.pkg.apis.dra.{version}.DRAPlugin/{method}"
TIMEOUT_S = 30.0  # seconds per call: a prepare may read the claim from the API server


class DraPluginError(errors.ConformanceError):
    """A DRAPlugin call could not be made or its answer breaks the wire contract (gRPC failure, no entry for
    a requested claim UID, no plugin of the driver registered). Per-claim ``error`` strings are not raised:
    they are results (:attr:`PrepareResult.error`). Reporting classes it a driver defect."""


class PluginRelayError(DraPluginError):
    """The helper pod's gRPC relay (the node-access path to the driver's socket) gave no answer of the driver:
    the exec into it failed or it printed no relay line (conformance/node/exec_grpc.py). The cluster's or the
    harness's, never counted as the driver's answer (reporting: infrastructure; s16 breaker F2)."""


def _messages():
    try:
        from conformance.node import draplugin_v1_pb2 as pb  # noqa: PLC0415
    except ImportError as exc:
        raise errors.ConfigError(
            "DRA plugin stubs are not generated",
            source="conformance/node",
            fix="run `python -m conformance.protos` (make test does)",
        ) from exc
    return pb


@dataclasses.dataclass(frozen=True)
class ClaimRef:
    """What the kubelet sends for one claim: ``namespace``, ``name``, ``uid``."""

    namespace: str
    name: str
    uid: str


@dataclasses.dataclass(frozen=True)
class PreparedDevice:
    """One ``Device`` of a NodePrepareResources answer: request names, pool, device, CDI device IDs."""

    request_names: tuple[str, ...]
    pool: str
    device: str
    cdi_ids: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PrepareResult:
    """The answer for one claim UID: ``devices`` (in answer order) and the per-claim ``error`` ("" = none)."""

    uid: str
    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""

    @property
    def device_names(self) -> set[tuple[str, str]]:
        """``{(pool, device)}`` the driver says it prepared."""
        return {(d.pool, d.device) for d in self.devices}

    @property
    def cdi_ids(self) -> set[str]:
        """Every CDI device ID of the answer."""
        return {cid for d in self.devices for cid in d.cdi_ids}


@dataclasses.dataclass(frozen=True)
class UnprepareResult:
    """The answer of NodeUnprepareResources for one claim UID: the per-claim ``error`` ("" = none)."""

    uid: str
    error: str = ""


def endpoint_of(infos: Sequence[dict], driver: str, node: str = "") -> tuple[str, str]:
    """``(socket path, service version)`` of ``driver``'s DRA plugin among registration GetInfo answers
    (``[{type, name, endpoint, supported_versions}]``, see :func:`conformance.node.registration.plugins_in`).
    Raises DraPluginError naming the answers when no registered DRAPlugin of ``driver`` advertises an endpoint
    and a supported DRAPlugin service version."""
    for info in infos:
        if info.get("type") != PLUGIN_TYPE or info.get("name") != driver or not info.get("endpoint"):
            continue
        offered = {v.split(".", 1)[0] for v in info.get("supported_versions") or [] if v.endswith(PLUGIN_TYPE)}
        for version in SERVICE_VERSIONS:
            if version in offered:
                return info["endpoint"], version
    raise DraPluginError(
        f"no DRAPlugin of driver {driver!r} with an endpoint and a service version in "
        f"{[v + '.' + PLUGIN_TYPE for v in SERVICE_VERSIONS]} is registered on node {node or '?'}: {list(infos)}"
    )


def replaced_uid(uid: str) -> str:
    """A UID of the same shape as ``uid`` but different from it (deterministic): what the kubelet would send
    for a claim that was deleted and re-created under the same name (upstream test-driver "got replaced")."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"dra-conformance/replaced/{uid}"))


class DraPluginClient:
    """Calls one driver's DRAPlugin service on one node. ``socket``: the advertised endpoint (a path this host
    can dial); ``version``: ``v1`` or ``v1beta1``; ``timeout``: seconds per call. Claims are objects with
    ``namespace``, ``name`` and ``uid`` (a ResourceClaim ``Obj`` or a :class:`ClaimRef`). ``prepared`` lists
    the :class:`ClaimRef` of every claim a call here prepared without error and did not unprepare since (what
    a fixture may have to unprepare); ``dial``: how to reach the socket (see unixsock.Dial). Errors:
    DraPluginError."""

    def __init__(
        self,
        socket: Path | str,
        version: str = "v1",
        *,
        driver: str = "",
        node: str = "",
        timeout: float = TIMEOUT_S,
        dial: unixsock.Dial = unixsock.channel,
    ) -> None:
        if version not in SERVICE_VERSIONS:
            raise ValueError(f"DRAPlugin service version {version!r} is not one of {SERVICE_VERSIONS}")
        self.socket, self.version, self.driver, self.node, self.timeout = str(socket), version, driver, node, timeout
        self.dial = dial
        self.prepared: list[ClaimRef] = []

    def __repr__(self) -> str:
        return f"DraPluginClient({self.driver or '?'} on {self.node or '?'}: {self.version} at {self.socket})"

    def _call(self, method: str, request, response_type, refusal_as_reply: bool = False):
        """The reply of ``method``; with ``refusal_as_reply``, a call the service answered with an error status
        (not UNAVAILABLE, UNIMPLEMENTED or DEADLINE_EXCEEDED) returns that status text instead: for a one-claim
        call it is that claim's failure, as the kubelet counts it (an error for every claim of a failed call)."""
        path = METHOD.format(version=self.version, method=method)
        try:
            with self.dial(self.socket) as channel:
                call = channel.unary_unary(
                    path,
                    request_serializer=type(request).SerializeToString,
                    response_deserializer=response_type.FromString,
                )
                with self._timed(method, len(request.claims), channel):
                    return call(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            detail = f"{exc.code().name}: {exc.details()}" if isinstance(exc, grpc.Call) else str(exc)
            if getattr(exc, "relay_failed", False):  # our relay, not the driver's socket, gave no answer
                raise PluginRelayError(f"{path} on {self!r}: {detail}") from exc
            transport = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.DEADLINE_EXCEEDED)
            if refusal_as_reply and isinstance(exc, grpc.Call) and exc.code() not in transport:
                return f"the whole call failed with {detail}"
            raise DraPluginError(f"{path} on {self!r} failed: {detail}") from exc

    @contextlib.contextmanager
    def _timed(self, method: str, claims: int, channel):
        """Record the call's duration (:mod:`conformance.node.call_timing`; calls naming no claim, the
        :meth:`serving` probe, are not driver work and are not recorded): the relay's own in-pod figure when the
        channel carries one (``seconds``), else this host's round trip (``relay-exec`` when that includes an
        exec into a helper pod)."""
        start, ok = time.perf_counter(), False
        try:
            yield
            ok = True
        finally:
            took = time.perf_counter() - start
            relayed = getattr(channel, "seconds", None)
            if claims:
                via = "relay" if relayed is not None else "relay-exec" if hasattr(channel, "seconds") else "direct"
                call_timing.record(
                    self.driver, self.node, method, claims, took if relayed is None else relayed, ok, via
                )

    def _entry(self, reply, uid: str, method: str):
        if uid not in reply.claims:
            raise DraPluginError(
                f"{method} answer of {self!r} has no entry for claim UID {uid} (entries: {sorted(reply.claims)}); "
                "the kubelet counts a missing entry as a failure"
            )
        return reply.claims[uid]

    def prepare(self, claim, uid: str | None = None) -> PrepareResult:
        """NodePrepareResources for one claim (``uid`` overrides the claim's own UID). Returns its entry; a call
        the service fails with an error status (e.g. dra-example-driver's "claim ... got replaced") is that
        claim's ``error``. Raises DraPluginError when the service cannot be reached or the answer lacks the
        claim."""
        pb = _messages()
        ref = pb.Claim(namespace=claim.namespace, name=claim.name, uid=uid or claim.uid)
        return self._prepare([ref])[ref.uid]

    def prepare_all(self, claims: Sequence) -> dict[str, PrepareResult]:
        """One NodePrepareResources call naming every claim of ``claims`` (as the kubelet does for the claims of
        one pod and driver): ``{claim UID: its entry}``. A call the service fails as a whole gives every claim
        that error. Raises DraPluginError when the service cannot be reached or an entry is missing (the
        kubelet's "NodePrepareResources skipped N ResourceClaims"). Source: dra-protocols.md §2.3."""
        pb = _messages()
        return self._prepare([pb.Claim(namespace=c.namespace, name=c.name, uid=c.uid) for c in claims])

    def _prepare(self, refs: list) -> dict[str, PrepareResult]:
        pb = _messages()
        reply = self._call(
            "NodePrepareResources",
            pb.NodePrepareResourcesRequest(claims=refs),
            pb.NodePrepareResourcesResponse,
            refusal_as_reply=True,
        )
        if isinstance(reply, str):
            return {ref.uid: PrepareResult(ref.uid, (), reply) for ref in refs}
        out = {}
        for ref in refs:
            entry = self._entry(reply, ref.uid, "NodePrepareResources")
            devices = tuple(
                PreparedDevice(tuple(d.request_names), d.pool_name, d.device_name, tuple(d.cdi_device_ids))
                for d in entry.devices
            )
            if not entry.error and ClaimRef(ref.namespace, ref.name, ref.uid) not in self.prepared:
                self.prepared.append(ClaimRef(ref.namespace, ref.name, ref.uid))
            out[ref.uid] = PrepareResult(ref.uid, devices, entry.error)
        return out

    def unprepare(self, claim, uid: str | None = None) -> UnprepareResult:
        """NodeUnprepareResources for one claim (``uid`` overrides the claim's own UID). Returns its entry."""
        pb = _messages()
        ref = pb.Claim(namespace=claim.namespace, name=claim.name, uid=uid or claim.uid)
        return self._unprepare([ref])[ref.uid]

    def unprepare_all(self, claims: Sequence) -> dict[str, UnprepareResult]:
        """One NodeUnprepareResources call naming every claim of ``claims``: ``{claim UID: its entry}``. Raises
        DraPluginError when the service cannot be reached or an entry is missing. Source: dra-protocols.md §2.4."""
        pb = _messages()
        return self._unprepare([pb.Claim(namespace=c.namespace, name=c.name, uid=c.uid) for c in claims])

    def _unprepare(self, refs: list) -> dict[str, UnprepareResult]:
        pb = _messages()
        reply = self._call(
            "NodeUnprepareResources", pb.NodeUnprepareResourcesRequest(claims=refs), pb.NodeUnprepareResourcesResponse
        )
        out = {}
        for ref in refs:
            entry = self._entry(reply, ref.uid, "NodeUnprepareResources")
            if not entry.error:
                self.prepared = [p for p in self.prepared if p != ClaimRef(ref.namespace, ref.name, ref.uid)]
            out[ref.uid] = UnprepareResult(ref.uid, entry.error)
        return out

    def serving(self) -> bool:
        """Whether the service answers a NodeUnprepareResources call with no claims (True) or fails (False)."""
        pb = _messages()
        try:
            self._call("NodeUnprepareResources", pb.NodeUnprepareResourcesRequest(), pb.NodeUnprepareResourcesResponse)
        except DraPluginError:
            return False
        return True
