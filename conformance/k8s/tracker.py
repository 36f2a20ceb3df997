"""The resource tracker: the only way suites create objects (design.md §6; csi-sanity's resource tracker).

It records each object right after create and deletes everything in the DRA teardown order, written once:
pods (wait gone) -> claims (wait deallocated, then gone) -> templates -> DeviceTaintRules, DeviceClasses,
test-made ResourceSlices -> namespaces. Within a phase it deletes LIFO. NotFound is ignored; every other
error is collected and one :class:`~conformance.core.errors.LeakError` lists the survivors. Pods holding
claims are never force-deleted (that would skip NodeUnprepareResources).
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Callable

from conformance.core import errors, timeouts

from .client import K8s
from .objects import Obj, as_dict
from . import waits

# phase rank per kind: lower is deleted first
PHASES = {"Pod": 0, "ResourceClaim": 1, "ResourceClaimTemplate": 2, "DeviceTaintRule": 3, "DeviceClass": 3,
          "ResourceSlice": 3, "Namespace": 9}
OTHER_PHASE = 4


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


class Tracker:
    """Creates and tracks objects for one test (or one session). ``on_create`` callbacks get each created
    :class:`Obj` (the reporting evidence collector uses it)."""

    def __init__(self, k8s: K8s, *, phase_timeout: float | None = None) -> None:
        self.k8s = k8s
        self.items: list[Tracked] = []
        self.phase_timeout = phase_timeout
        self.on_create: list[Callable[[Obj], None]] = []
        self._lock = threading.Lock()

    def create(self, obj: Obj | dict) -> Obj:
        """Create ``obj`` and record it before returning the stored object (raises ApiError on refusal)."""
        created = self.k8s.create(obj)
        self.adopt(created)
        for cb in self.on_create:
            cb(created)
        return created

    def adopt(self, obj: Obj) -> Obj:
        """Record an object created elsewhere so teardown deletes it."""
        raw = as_dict(obj)
        with self._lock:
            self.items.append(Tracked(raw["kind"], raw["metadata"]["name"], raw["metadata"].get("namespace", ""),
                                      raw["metadata"].get("uid", ""), raw.get("apiVersion", "v1").rsplit("/", 1)[-1]))
        return obj if isinstance(obj, Obj) else Obj(raw)

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

    def cleanup(self) -> None:
        """Delete everything in DRA order and wait per phase; raise LeakError listing survivors."""
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
            deleted = [t for t in batch if self._delete(t, problems)]
            for t in deleted:
                if t.kind == "Namespace":
                    continue  # namespace removal finishes asynchronously; the session sweep waits for it
                if t.kind == "Pod":
                    self._wait_generated_claims_released(t, problems)
                if not self._wait_gone(t, problems):
                    survivors.append(t.ref)
        if survivors or problems:
            raise errors.LeakError(survivors, problems)

    def _delete(self, t: Tracked, problems: list[str]) -> bool:
        try:
            self.k8s.delete(t.kind, t.name, t.namespace or None, version=t.version)
            return True
        except errors.NotFound:
            return False
        except errors.ApiError as exc:
            problems.append(f"delete {t.ref}: {exc}")
            return True

    def _timeout(self, kind: str) -> float:
        if self.phase_timeout:
            return self.phase_timeout
        return {"Pod": timeouts.POD_DELETE, "ResourceClaim": timeouts.DEALLOCATION}.get(kind, timeouts.API_SHORT)

    def _wait_gone(self, t: Tracked, problems: list[str]) -> bool:
        try:
            waits.until(self.k8s, t.kind, t.name, t.namespace or None,
                        done=lambda o: o is None or (t.uid and o.uid != t.uid), timeout=self._timeout(t.kind),
                        awaited=f"{t.ref} deleted", version=t.version)
            return True
        except errors.WaitTimeout as exc:
            problems.append(str(exc))
            return False

    def _wait_generated_claims_released(self, t: Tracked, problems: list[str]) -> None:
        """After a pod is gone, claims generated from its templates must deallocate and disappear too."""
        try:
            claims = self.k8s.list("ResourceClaim", t.namespace)
        except errors.ApiError:
            return
        for claim in claims:
            owners = claim.get("metadata.ownerReferences") or []
            if any(o.get("kind") == "Pod" and o.get("name") == t.name for o in owners):
                try:
                    waits.claim_deallocated(self.k8s, claim, timeout=self._timeout("ResourceClaim"))
                except errors.WaitTimeout as exc:
                    problems.append(str(exc))
