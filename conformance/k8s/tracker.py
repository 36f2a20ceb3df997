"""The resource tracker: the only way suites create objects (design.md §6; csi-sanity's resource tracker).

It records each object right after create and deletes everything in the DRA teardown order, written once:
pods (wait gone) -> claims (wait deallocated and gone, then nothing prepared on any node) -> templates ->
DeviceTaintRules, DeviceClasses, test-made ResourceSlices -> namespaces. Within a phase it deletes LIFO (a
large phase several at a time) and waits with one LIST and watch per kind and namespace; each phase has one
deadline. NotFound is ignored; a delete that fails with another error is recorded and not
waited for; every error is collected and one :class:`~conformance.core.errors.LeakError` lists the survivors
(and each claim still prepared, with its node). Pods holding claims are never force-deleted (that would skip
NodeUnprepareResources).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from conformance.core import errors, timeouts
from conformance.core.objects import Obj, as_dict
from conformance.k8s import waits
from conformance.k8s.client import K8s

# phase rank per kind: lower is deleted first
PHASES = {
    "Pod": 0,
    "ResourceClaim": 1,
    "ResourceClaimTemplate": 2,
    "DeviceTaintRule": 3,
    "DeviceClass": 3,
    "ResourceSlice": 3,
    "Namespace": 9,
}
OTHER_PHASE = 4
PREPARED_POLL_S = 0.2  # seconds between two looks at the nodes' prepared claims
DELETE_WORKERS = 8  # DELETEs in flight for a phase of more objects than this (see Tracker._delete_all)


@dataclasses.dataclass(frozen=True)
class Tracked:
    """One created object: ``kind``, ``name``, ``namespace`` ("" when cluster-scoped), ``uid``, ``version``."""

    kind: str
    name: str
    namespace: str
    uid: str
    version: str

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @classmethod
    def of(cls, obj: Obj | dict) -> Tracked:
        """The record of an object dict or :class:`Obj` (kind, metadata.name/namespace/uid, apiVersion)."""
        raw = as_dict(obj)
        meta = raw["metadata"]
        return cls(
            raw["kind"],
            meta["name"],
            meta.get("namespace", ""),
            meta.get("uid", ""),
            raw.get("apiVersion", "v1").rsplit("/", 1)[-1],
        )


# claims -> [(claim, node name, evidence)] for each claim some node still has prepared (a NodeAccess view,
# injected by the pytest glue: this layer cannot reach nodes)
PreparedCheck = Callable[[Sequence[Tracked]], list[tuple[Tracked, str, str]]]


class Tracker:
    """Creates and tracks objects for one test (or one session). ``on_create`` callbacks get each created
    :class:`Obj` (the reporting evidence collector uses it).

    ``phase_timeout``: seconds (scaled by ``--timeout-scale``) for every teardown phase; default per phase
    from :mod:`conformance.core.timeouts`. ``prepared``: when the run can look at nodes, a
    :data:`PreparedCheck` telling which deleted claims a node still has prepared (CDI specs, PodResources);
    teardown then waits, within the claims phase's deadline, until none is. ``before_create`` callbacks get
    each object before it is created (the parallel run takes its device lock there before a Pod);
    ``before_release`` and ``after_release`` callbacks run around a mid-test release of its devices
    (:meth:`release_devices`).
    """

    def __init__(self, k8s: K8s, *, phase_timeout: float | None = None, prepared: PreparedCheck | None = None) -> None:
        self.k8s = k8s
        self.items: list[Tracked] = []
        self.phase_timeout = phase_timeout
        self.prepared = prepared
        self.on_create: list[Callable[[Obj], None]] = []
        self.before_create: list[Callable[[Obj | dict], None]] = []
        self.before_release: list[Callable[[], None]] = []
        self.after_release: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def create(self, obj: Obj | dict) -> Obj:
        """Create ``obj`` and record it before returning the stored object (raises ApiError on refusal)."""
        for cb in self.before_create:
            cb(obj)
        created = self.k8s.create(obj)
        self.adopt(created)
        for cb in self.on_create:
            cb(created)
        return created

    def adopt(self, obj: Obj) -> Obj:
        """Record an object created elsewhere so teardown deletes it."""
        with self._lock:
            self.items.append(Tracked.of(obj))
        return obj if isinstance(obj, Obj) else Obj(as_dict(obj))

    def objects(self) -> list[Obj]:
        """Current state of every tracked object that still exists (for evidence)."""
        out = []
        for t in list(self.items):
            try:
                out.append(self.k8s.get(t.kind, t.name, t.namespace or None, t.version))
            except errors.ApiError:
                continue
        return out

    def namespaces(self) -> list[str]:
        """Namespaces that tracked objects live in (or are)."""
        found = {t.namespace for t in self.items if t.namespace}
        found |= {t.name for t in self.items if t.kind == "Namespace"}
        return sorted(found)

    def release_devices(self) -> None:
        """Mid-test: delete everything created so far exactly as teardown does (:meth:`cleanup`: pods, then
        claims gone and unprepared on the nodes; raises LeakError), then call the ``after_release`` callbacks:
        the test holds no device any more (the parallel run gives its device lock back, so tests needing
        every device run during the rest of this one, e.g. a fixed observation window). ``before_release``
        callbacks run first (the invariants plugin snapshots the test's claims there, as at teardown)."""
        for cb in self.before_release:
            cb()
        self.cleanup()
        for cb in self.after_release:
            cb()

    def cleanup(self) -> None:
        """Delete everything in DRA order, waiting per phase within its deadline; raise LeakError listing
        survivors, claims still prepared on a node, and every error."""
        with self._lock:
            items, self.items = list(self.items), []
        survivors: list[str] = []
        problems: list[str] = []
        order = sorted(enumerate(items), key=lambda p: (PHASES.get(p[1].kind, OTHER_PHASE), -p[0]))
        phases: dict[int, list[Tracked]] = {}
        for _, t in order:
            phases.setdefault(PHASES.get(t.kind, OTHER_PHASE), []).append(t)
        for rank in sorted(phases):
            batch = phases[rank]
            deadline = time.monotonic() + timeouts.scaled(max(self._timeout(t.kind) for t in batch))
            deleted = self._delete_all(batch, problems, survivors)
            # namespace removal finishes asynchronously; the session sweep waits for it
            waited = [t for t in deleted if t.kind != "Namespace"]
            released = self._wait_generated_claims_released([t for t in waited if t.kind == "Pod"], deadline, problems)
            stuck = self._wait_gone(waited, deadline, problems)
            survivors += [t.ref for t in waited if t in stuck]
            released += [t for t in waited if t.kind == "ResourceClaim" and t not in stuck]
            if released:
                survivors += self._wait_unprepared(released, deadline, problems)
        if survivors or problems:
            raise errors.LeakError(survivors, problems)

    def _delete_all(self, batch: list[Tracked], problems: list[str], survivors: list[str]) -> list[Tracked]:
        """Delete a phase's objects in LIFO order; those to wait for. A phase of more than DELETE_WORKERS
        objects (a sweep's hundreds of pods) sends DELETE_WORKERS DELETEs at a time: each is a round trip
        (~0.15 s on a loaded API server). Problems and survivors are recorded in the phase's order."""
        if len(batch) <= DELETE_WORKERS:
            return [t for t in batch if self._delete(t, problems, survivors)]

        def one(t: Tracked) -> tuple[bool, list[str], list[str]]:
            found: list[str] = []
            left: list[str] = []
            return self._delete(t, found, left), found, left

        pool = ThreadPoolExecutor(DELETE_WORKERS, thread_name_prefix="tracker-delete")
        try:
            results = list(pool.map(one, batch))
        finally:  # Ctrl-C: DELETEs not yet sent are dropped
            pool.shutdown(wait=True, cancel_futures=True)
        for _, found, left in results:
            problems += found
            survivors += left
        return [t for t, (wait, _, _) in zip(batch, results, strict=True) if wait]

    def _delete(self, t: Tracked, problems: list[str], survivors: list[str]) -> bool:
        """Delete ``t``; True when it must be waited for. A delete refused with another error than NotFound
        is recorded and not waited for (it cannot go away): ``t`` is a survivor unless it is gone already."""
        try:
            self.k8s.delete(t.kind, t.name, t.namespace or None, version=t.version)
            return True
        except errors.NotFound:
            return False
        except errors.ApiError as exc:
            problems.append(f"delete {t.ref}: {exc}")
        try:
            current = self.k8s.get(t.kind, t.name, t.namespace or None, t.version)
            if not t.uid or current.uid == t.uid:
                survivors.append(t.ref)
        except errors.NotFound:
            pass
        except errors.ApiError:
            survivors.append(t.ref)
        return False

    def _timeout(self, kind: str) -> float:
        if self.phase_timeout:
            return self.phase_timeout
        return {"Pod": timeouts.POD_DELETE, "ResourceClaim": timeouts.DEALLOCATION}.get(kind, timeouts.API_SHORT)

    @staticmethod
    def _left(deadline: float) -> float:
        """Unscaled seconds left until ``deadline`` (at least 1: a last look at an object costs little)."""
        return max(1.0, (deadline - time.monotonic()) / timeouts.scaled(1.0))

    def _wait_gone(self, items: list[Tracked], deadline: float, problems: list[str]) -> set[Tracked]:
        """Wait until every one of ``items`` is deleted (or replaced by an object with another UID): one wait
        per kind and namespace (one LIST and one watch, :func:`~conformance.k8s.waits.many.each_until`), one
        per cluster-scoped object. Returns those not gone by ``deadline``; each wait that ended records a
        problem naming them."""
        groups: dict[tuple, list[Tracked]] = {}
        for t in items:
            groups.setdefault((t.kind, t.version, t.namespace, "" if t.namespace else t.name), []).append(t)
        stuck: set[Tracked] = set()
        for group in groups.values():
            pending = self._wait_group_gone(group, deadline, problems)
            stuck |= {t for t in group if t.name in pending}
        return stuck

    def _wait_group_gone(self, group: list[Tracked], deadline: float, problems: list[str]) -> set[str]:
        """Names of ``group`` (one kind, version and namespace) not gone by ``deadline``."""
        first = group[0]
        uids: dict[str, set[str]] = {}
        for t in group:
            uids.setdefault(t.name, set()).add(t.uid)  # a name tracked twice: gone once neither UID is there

        def gone(name: str, obj: Obj | None) -> bool:
            return obj is None or ("" not in uids[name] and obj.uid not in uids[name])

        prefix = f"{first.kind} {first.namespace + '/' if first.namespace else ''}"
        try:
            waits.each_until(
                self.k8s,
                first.kind,
                first.namespace or None,
                uids,
                done=gone,
                timeout=self._left(deadline),
                awaited=lambda name: f"{prefix}{name} deleted",
                version=first.version,
            )
            return set()
        except waits.ManyTimeout as exc:
            problems.append(str(exc))
            return set(exc.pending)
        except (errors.WaitError, errors.ApiError) as exc:
            problems.append(str(exc))
            return set(uids)

    def _wait_generated_claims_released(
        self, pods: list[Tracked], deadline: float, problems: list[str]
    ) -> list[Tracked]:
        """After ``pods`` are deleted, the claims generated from their templates must deallocate and disappear
        too. Per namespace: one LIST of its claims (indexed by owning pod, :func:`claims_by_pod`) and one wait
        for all of theirs. Returns the deallocated ones (to check that no node still has them prepared); a
        claim still allocated at ``deadline`` is a problem naming it."""
        released: list[Tracked] = []
        for ns in sorted({t.namespace for t in pods}):
            try:
                owned = claims_by_pod(self.k8s.list("ResourceClaim", ns))
            except errors.ApiError:
                continue
            claims = {c.name: c for t in pods if t.namespace == ns for c in owned.get(t.name, [])}
            if not claims:
                continue
            try:
                waits.each_until(
                    self.k8s,
                    "ResourceClaim",
                    ns,
                    claims,
                    done=lambda _n, o: o is None or not (o.get("status.allocation") or o.get("status.reservedFor")),
                    timeout=self._left(deadline),
                    awaited=lambda name, ns=ns: f"claim {ns}/{name} deallocated",
                )
                pending: set[str] = set()
            except waits.ManyTimeout as exc:
                problems.append(str(exc))
                pending = set(exc.pending)
            except (errors.WaitError, errors.ApiError) as exc:
                problems.append(str(exc))
                pending = set(claims)
            released += [Tracked.of(c) for name, c in sorted(claims.items()) if name not in pending]
        return released

    def _wait_unprepared(self, claims: list[Tracked], deadline: float, problems: list[str]) -> list[str]:
        """Poll :attr:`prepared` until no node has any of ``claims`` prepared or ``deadline`` passes; return
        ``"<claim ref> still prepared on node <node> (<evidence>)"`` for each one left (none without a check)."""
        if self.prepared is None:
            return []
        left: list = []

        def none_prepared() -> bool:
            left[:] = self.prepared(claims)
            return not left

        try:
            waits.poll(
                none_prepared, timeout=max(deadline - time.monotonic(), 0.001), interval=PREPARED_POLL_S, scale=False
            )
        except Exception as exc:  # noqa: BLE001 - node access is evidence here: a failing look is reported
            problems.append(f"could not check that nodes unprepared {[c.ref for c in claims]}: {exc}")
            return []
        return [f"{claim.ref} still prepared on node {node} ({evidence})" for claim, node, evidence in left]


def claims_by_pod(claims: list[Obj]) -> dict[str, list[Obj]]:
    """``{pod name: claims with an ownerReference to that Pod}``: the claims generated from a pod's
    ResourceClaimTemplates (core/v1 PodStatus.resourceClaimStatuses; the resourceclaim controller sets the owner),
    built in one pass so a sweep of N pods reads the namespace's claims once, not N times."""
    out: dict[str, list[Obj]] = {}
    for claim in claims:
        for pod in {o.get("name") for o in claim.get("metadata.ownerReferences") or [] if o.get("kind") == "Pod"}:
            out.setdefault(pod, []).append(claim)
    return out
