"""Publishes this node's pool (see :mod:`reference_driver.slices`) and keeps it published.

``sync()`` compares the desired slices with what the API server has (field selectors ``spec.nodeName``
and ``spec.driver``) and writes only on a difference, bumping ``pool.generation``; ``run()`` repeats it on
every watch event and every ``resync`` seconds, so slices deleted by the kubelet at start-up (or by anyone)
are re-created. Sources: dra-protocols.md §1.5 and §7.4; upstream "ResourceSlice must be removed on kubelet
startup"; k8s.io/dynamic-resource-allocation resourceslice controller behaviour.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from dataclasses import dataclass

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from . import devicestatus, sharing, slices
from .faults import Faults
from .kube import REQUEST_TIMEOUT, node_uid

log = logging.getLogger(__name__)


def _equal_quantities(a: object, b: object) -> bool:
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    try:
        return parse_quantity(a) == parse_quantity(b)
    except ValueError:
        return False


CHURN_EVERY_S = 8  # fault slices-churn: seconds between rewrites of unchanged slices
GATED_DEVICE_FIELDS = ("bindingConditions", "bindingFailureConditions", "bindsToNode")
"""Device fields the API server drops while their feature gate (DRADeviceBindingConditions) is off."""


def _without_dropped(want: dict, have: dict) -> dict:
    """``want`` (a slice spec) without the :data:`GATED_DEVICE_FIELDS` the server dropped from every device of
    ``have``: with the gate off they never persist, and comparing them would republish forever."""
    have_devices = have.get("devices") or []
    if any(k in d for d in have_devices for k in GATED_DEVICE_FIELDS) or not want.get("devices"):
        return want
    devices = [{k: v for k, v in d.items() if k not in GATED_DEVICE_FIELDS} for d in want["devices"]]
    return {**want, "devices": devices}


def skipped_node(node: str) -> bool:
    """The nodes fault ``publishes-on-some-nodes-only`` publishes nothing on: a name ending in 1-9."""
    return bool(node) and node[-1] in "123456789"


@dataclass(frozen=True)
class SyncResult:
    """Outcome of one sync: whether anything was written, the pool generation, the slice names."""

    changed: bool
    generation: int
    names: tuple[str, ...]


class SlicePublisher:
    """Keeps the node's ResourceSlices equal to the inventory."""

    def __init__(
        self,
        api: client.ApiClient,
        node: str,
        driver: str,
        snapshot,
        faults: Faults = Faults(),
        resync: float = 60.0,
        binding_conditions: bool = False,
    ) -> None:
        self._resource = client.ResourceV1Api(api)
        self._api, self.node, self.driver, self._snapshot = api, node, driver, snapshot
        self.faults, self.resync = faults, resync
        self.generation = 0
        self._separate: bool | None = None
        self._taints_written = False  # this publisher wrote device taints at least once
        self._written_at = time.monotonic()  # when this publisher last wrote its slices (fault slices-churn)
        self._used = threading.Event()  # a claim was prepared or unprepared (fault slices-churn-on-use)
        self.taints_dropped = False  # the API server dropped them (DRADeviceTaints off): publish none
        self._stop = threading.Event()
        self._selector = f"spec.nodeName={node},spec.driver={driver}"
        self.binding_conditions = binding_conditions  # publish devices with bindingConditions (KEP-5007)

    def separate_counters(self) -> bool:
        """True unless the API server is 1.34 (sharedCounters and devices share a slice there)."""
        if self._separate is None:
            try:
                minor = client.VersionApi(self._api).get_code(_request_timeout=REQUEST_TIMEOUT).minor
                self._separate = int("".join(ch for ch in minor if ch.isdigit()) or 35) >= 35
            except Exception as err:  # noqa: BLE001 - assume a current server; the write reports problems
                log.warning("cannot read the API server version (%s); using the 1.35+ slice layout", err)
                return True
        return self._separate

    def existing(self) -> list[dict]:
        """This node's slices of this driver, as JSON."""
        resp = self._resource.list_resource_slice(
            field_selector=self._selector, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        return json.loads(resp.data).get("items") or []

    def desired(self, uid: str, generation: int, taints: bool = True) -> list[dict]:
        """The slices this node should have at ``generation`` (none with fault ``no-slices``, nor with
        ``publishes-on-some-nodes-only`` on a :func:`skipped_node`; faults
        ``oversized-slice``, ``attribute-missing``, ``attribute-wrong-type``, ``wrong-slice-count``,
        ``slices-no-owner``, ``counters-understated``, ``capacity-overstated`` and ``taint-dropped`` change them;
        no taints once the server dropped them)."""
        if self.faults.on("no-slices") or (self.faults.on("publishes-on-some-nodes-only") and skipped_node(self.node)):
            return []
        limit = None if self.faults.on("oversized-slice") else slices.MAX_DEVICES
        snap = sharing.as_published(
            self._snapshot(),
            understate_counters=self.faults.on("counters-understated"),
            overstate_capacity=self.faults.on("capacity-overstated"),
        )
        planned = slices.plan(snap, self.node, self.driver, self.separate_counters(), limit)
        planned = slices.edit_attributes(
            planned,
            drop="model" if self.faults.on("attribute-missing") else "",
            as_string="index" if self.faults.on("attribute-wrong-type") else "",
        )
        if not taints or self.taints_dropped or self.faults.on("taint-dropped"):
            planned = slices.without_taints(planned)
        if self.binding_conditions:
            planned = [
                dataclasses.replace(p, devices=tuple(devicestatus.with_binding_conditions(d) for d in p.devices))
                for p in planned
            ]
        if self.faults.on("duplicate-device-across-slices"):
            planned = slices.with_duplicate_device(planned, self.node, self.driver)
        count = len(planned) + 1 if self.faults.on("wrong-slice-count") else None
        owned = not self.faults.on("slices-no-owner")
        return slices.render(planned, self.node, uid, self.driver, generation, count, owned)

    def _consistent(self, want: list[dict], have: dict[str, dict]) -> bool:
        if set(have) != {w["metadata"]["name"] for w in want}:
            return False
        gens = {h["spec"]["pool"].get("generation") for h in have.values()}
        if len(gens) > 1:
            return False
        for w in want:
            h = have[w["metadata"]["name"]]
            w_spec = {**w["spec"], "pool": {**w["spec"]["pool"], "generation": h["spec"]["pool"].get("generation")}}
            w_spec = _without_dropped(w_spec, h["spec"])
            if not slices.matches(w_spec, h["spec"], _equal_quantities, exact=True):
                return False
            owners = h["metadata"].get("ownerReferences") or []
            if not slices.matches(w["metadata"]["ownerReferences"], owners):
                return False
        return True

    def sync(self) -> SyncResult:
        """Make the API match the inventory. Raises ApiException on API errors (the caller retries)."""
        uid = node_uid(self._api, self.node)
        have = {s["metadata"]["name"]: s for s in self.existing()}
        current = max([s["spec"]["pool"].get("generation", 0) for s in have.values()] or [0])
        probe = self.desired(uid, current)
        if self._consistent(probe, have) and not self._churn_due():
            self.generation = current
            return SyncResult(False, current, tuple(sorted(have)))
        if self._taints_written and self._consistent(self.desired(uid, current, taints=False), have):
            # without this, every write would differ again and the pool would be republished forever
            log.warning("the API server dropped the device taints (feature gate DRADeviceTaints off?); publishing none")
            self.taints_dropped = True
            self.generation = current
            return SyncResult(False, current, tuple(sorted(have)))
        if self.faults.on("wrong-pool-generation"):
            generation = self.generation or 1
        else:
            generation = max(self.generation, current) + 1
        want = self.desired(uid, generation)
        for obj in want:
            old = have.get(obj["metadata"]["name"])
            if old is None:
                self._resource.create_resource_slice(obj, _request_timeout=REQUEST_TIMEOUT)
            else:
                obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                self._resource.replace_resource_slice(obj["metadata"]["name"], obj, _request_timeout=REQUEST_TIMEOUT)
        wanted = {w["metadata"]["name"] for w in want}
        for name in sorted(set(have) - wanted):
            try:
                self._resource.delete_resource_slice(name, _request_timeout=REQUEST_TIMEOUT)
            except ApiException as err:
                if err.status != 404:
                    raise
        self.generation, self._written_at = generation, time.monotonic()
        self._used.clear()
        self._taints_written = any(d.get("taints") for w in want for d in w["spec"].get("devices") or [])
        log.info("published pool %s generation %d: %d slice(s)", self.node, generation, len(want))
        return SyncResult(True, generation, tuple(sorted(wanted)))

    def _churn_due(self) -> bool:
        """Fault ``slices-churn``: True once :data:`CHURN_EVERY_S` passed since the last write; fault
        ``slices-churn-on-use``: True after :meth:`used` (unchanged slices are then republished at a new
        generation)."""
        if self._used.is_set():
            return True
        return self.faults.on("slices-churn") and time.monotonic() - self._written_at >= CHURN_EVERY_S

    def used(self, _devices: object = None) -> None:
        """Fault ``slices-churn-on-use``: a claim was prepared or unprepared; republish the pool now (in a thread,
        so the kubelet's call is not held up)."""
        if self.faults.on("slices-churn-on-use"):
            self._used.set()
            threading.Thread(target=self.sync_with_retry, name="slices-churn-on-use", daemon=True).start()

    def sync_with_retry(self, attempts: int = 5) -> SyncResult | None:
        """``sync()`` retried on conflicts and transient errors; None when every attempt failed (logged)."""
        for attempt in range(attempts):
            try:
                return self.sync()
            except ApiException as err:
                log.warning("slice sync attempt %d failed: %s %s", attempt + 1, err.status, err.reason)
            except Exception as err:  # noqa: BLE001 - network errors: keep the plugin alive, retry
                log.warning("slice sync attempt %d failed: %s", attempt + 1, err)
            if self._stop.wait(min(0.2 * 2**attempt, 5.0)):
                return None
        return None

    def run(self) -> None:
        """Sync, then re-sync on every watch event and every ``resync`` seconds until ``stop()``."""
        first = self.sync_with_retry()
        log.info(
            "initial slice sync: %s",
            "failed"
            if first is None
            else f"{'written' if first.changed else 'unchanged'}, pool {self.node} generation {first.generation}, "
            f"slices {list(first.names)}",
        )
        if self.faults.on("no-republish"):
            self._stop.wait()
            return
        while not self._stop.is_set():
            try:
                stream = watch.Watch().stream(
                    self._resource.list_resource_slice,
                    field_selector=self._selector,
                    timeout_seconds=CHURN_EVERY_S if self.faults.on("slices-churn") else max(1, int(self.resync)),
                    _request_timeout=self.resync + REQUEST_TIMEOUT,
                )
                for _event in stream:
                    if self._stop.is_set():
                        return
                    self.sync_with_retry()
            except Exception as err:  # noqa: BLE001 - watch dropped: back off, then list again
                log.warning("slice watch ended: %s", err)
                if self._stop.wait(1.0):
                    return
            self.sync_with_retry()

    def stop(self) -> None:
        """Ask ``run()`` to return (at the latest after the current watch times out)."""
        self._stop.set()
