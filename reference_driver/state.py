"""The device state machine: ``prepare(claim)`` / ``unprepare(uid)`` with one lock, backed by CDI specs and
the checkpoint. No grpc, no kubernetes import: the claim comes from a :class:`ClaimSource`.

Contract (KEP-4381; upstream test-driver kubeletplugin.go; dra-protocols.md §2.3):
- prepare is idempotent per claim UID (a repeat returns the same devices and restores a missing CDI spec);
- prepare refuses claims that are replaced (UID mismatch), unallocated, or name devices not on this node;
- unprepare works from the driver's own state, is idempotent, and an unknown claim is a success (its CDI
  spec file is still removed if one is left over, e.g. after a quarantined checkpoint).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from . import cdi, claims, identity, positional, sharing, sticky
from .checkpoint import Checkpoint, CheckpointCorrupt
from .claims import ClaimError, ClaimRef
from .faults import PREPARE_ERRORS, Faults
from .inventory.base import Device, Snapshot
from .prepared import ClaimSource, PreparedDevice, RecoveryReport, UnprepareError

CDI_LATE_S = 30.0  # fault cdi-after-reply: the kubelet creates the containers well within this after prepare

log = logging.getLogger(__name__)


def _neighbour(alloc: claims.AllocatedDevice, snap: Snapshot) -> tuple[claims.AllocatedDevice, Device]:
    """Fault ``wrong-cdi-device``: the device after ``alloc.device`` in name order (wrapping; itself when it is
    the node's only device), in place of the allocated one."""
    other = _next_name(snap, alloc.device)
    return replace(alloc, device=other), snap.device(other)


def _next_name(snap: Snapshot, device: str) -> str:
    """The name after ``device`` among the node's devices in name order (wrapping; itself when it is the only)."""
    names = sorted(d.name for d in snap.devices)
    return names[(names.index(device) + 1) % len(names)]


class DeviceState:
    """Prepared claims of this node's driver instance.

    ``snapshot`` returns the current inventory; ``pools`` are the pool names this node publishes.
    """

    def __init__(
        self,
        driver: str,
        pools: set[str],
        snapshot: Callable[[], Snapshot],
        source: ClaimSource,
        store: cdi.CdiStore,
        checkpoint: Checkpoint,
        faults: Faults = Faults(),
        on_unprepared: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.driver, self.pools, self._snapshot, self._source = driver, set(pools), snapshot, source
        self.on_unprepared = on_unprepared  # called with the device names of each claim unprepared
        self.store, self.checkpoint, self.faults = store, checkpoint, faults
        self._lock = threading.Lock()
        self._claims: dict[str, dict] = {}
        self._leaked: dict[str, sharing.Holds] = {}  # fault partition-not-freed: slices of unprepared claims
        self._forgot = False  # fault checkpoint-not-migrated: an old checkpoint was ignored at recovery
        self._failed_once: set[str] = set()  # fault prepare-fails-once: claim UIDs whose first prepare failed
        self._repeats = 0  # fault cdi-ids-change-on-repeat: how many repeated prepares were answered
        self._last_config: sticky.Remembered = {}  # fault device-config-sticks: each device's last config

    def recover(self) -> RecoveryReport:
        """Load the checkpoint and rewrite CDI specs of prepared claims that vanished.

        A corrupt checkpoint is moved aside (logged) and the state starts empty; a checkpoint of another
        version raises CheckpointVersionError (never discard another version's state).
        """
        report = RecoveryReport()
        if self.faults.on("forget-prepared-on-restart"):
            log.warning("fault forget-prepared-on-restart: checkpoint %s not read", self.checkpoint.path)
            return report
        with self._lock:
            try:
                loaded = self.checkpoint.load()
            except CheckpointCorrupt as err:
                moved = self.checkpoint.quarantine()
                log.error("%s; moved it to %s and starting with no prepared claims", err, moved)
                report.quarantined, loaded = str(moved), {}
            loaded = self._migrate(loaded)
            self._claims = loaded
            rewritten = []
            restore = not self.faults.on("cdi-not-restored-after-reboot")
            for uid, entry in loaded.items():
                if restore and not self.store.exists(uid) and entry.get("cdiSpec"):
                    self.store.write(uid, entry["cdiSpec"])
                    rewritten.append(uid)
            report.claims, report.rewritten = len(loaded), tuple(rewritten)
        return report

    def _migrate(self, loaded: dict[str, dict]) -> dict[str, dict]:
        """Rewrite a checkpoint of another readable format in the write format (caller holds the lock);
        returns the claims to keep. Fault ``checkpoint-not-migrated``: a format 1 file is ignored (no claims
        kept; the file is overwritten at the next save); fault ``downgrade-forgets-newer-checkpoint``: the same for
        a file newer than the write format (a downgrade). Raises OSError when the rewrite fails."""
        found, wanted = self.checkpoint.loaded_version, self.checkpoint.write_version
        if found is None or found == wanted:
            return loaded
        if found == 1 and self.faults.on("checkpoint-not-migrated"):
            log.warning("fault checkpoint-not-migrated: format 1 checkpoint %s ignored", self.checkpoint.path)
            self._forgot = True
            return {}
        if found > wanted and self.faults.on("downgrade-forgets-newer-checkpoint"):
            log.warning(
                "fault downgrade-forgets-newer-checkpoint: format %s checkpoint %s ignored", found, self.checkpoint.path
            )
            self._forgot = True
            return {}
        if found < wanted and self.faults.on("upgrade-rewrites-cdi-spec"):
            self._retarget_specs(loaded)
        self.checkpoint.save(loaded)
        log.info(
            "checkpoint %s migrated from format %s to %s (%d claims)", self.checkpoint.path, found, wanted, len(loaded)
        )
        return loaded

    def _retarget_specs(self, loaded: dict[str, dict]) -> None:
        """Fault ``upgrade-rewrites-cdi-spec``: the upgraded driver regenerates the CDI specs of the claims the
        previous version prepared and gets their devices wrong (the next device by name, as after a changed
        device enumeration): each spec entry keeps its name, so the kubelet's CDI IDs now inject the other device
        into the claim's containers when they (re)start. ``loaded`` entries and the spec files are rewritten;
        the prepared devices reported to the kubelet stay the allocated ones. Caller holds the lock."""
        snap = self._snapshot()
        for uid, entry in loaded.items():
            spec, names = entry.get("cdiSpec"), [d["device"] for d in entry.get("devices") or []]
            if not spec or len(names) != len(spec.get("devices") or []):
                continue
            entries = []
            for item, name in zip(spec["devices"], names, strict=True):
                old = snap.device(name)
                new = snap.device(_next_name(snap, name)) if old else None
                entries.append(cdi.retargeted(item, old, new) if old and new else item)
            entry["cdiSpec"] = {**spec, "devices": entries}
            self.store.write(uid, entry["cdiSpec"])
            log.warning("fault upgrade-rewrites-cdi-spec: CDI spec of claim %s rewritten for other devices", uid)

    def prepared(self) -> dict[str, list[PreparedDevice]]:
        """Snapshot of prepared claims: UID -> devices."""
        with self._lock:
            return {uid: [PreparedDevice.from_json(d) for d in e["devices"]] for uid, e in self._claims.items()}

    def prepare(self, ref: ClaimRef) -> list[PreparedDevice]:
        """Prepare one claim (idempotent). Raises ClaimError with the message for the kubelet."""
        if bad := [f for f in PREPARE_ERRORS if self.faults.on(f)]:
            raise ClaimError(f"{ref}: injected fault {bad[0]}{PREPARE_ERRORS[bad[0]]}")
        if self.faults.on("prepare-fails-once") and ref.uid not in self._failed_once:
            self._failed_once.add(ref.uid)
            raise ClaimError(f"{ref}: injected fault prepare-fails-once (a retry succeeds)")
        with self._lock:
            done = self._existing(ref)
        if done is not None:
            return self._answer_again(ref, done)
        try:
            obj = self._source.get_claim(ref.namespace, ref.name)
        except LookupError:
            raise ClaimError(f"{ref} not found in the API server") from None
        except Exception as err:  # noqa: BLE001 - any API failure becomes this claim's error
            raise ClaimError(f"{ref}: reading the claim failed: {err}") from None
        allocs = claims.allocated_devices(
            obj,
            ref,
            self.driver,
            self.pools,
            check_uid=not self.faults.on("skip-uid-check"),
            ignore_claim_config=self.faults.on("ignore-claim-config"),
            ignore_class_config=self.faults.on("ignore-class-config"),
            quirks=frozenset(name for name in claims.QUIRKS if self.faults.on(name)),
        )
        if self.faults.on("admin-access-refused-in-use"):
            self._refuse_admin_access_in_use(ref, allocs)
        snap = self._snapshot()
        pairs = []
        for alloc in allocs:
            device = snap.device(alloc.device)
            if device is None:
                raise ClaimError(f"{ref}: device {alloc.pool}/{alloc.device} is not in this node's inventory")
            if device.taints and self.faults.on("tainted-prepare-refused"):
                raise ClaimError(f"{ref}: device {alloc.device} is tainted: injected fault tainted-prepare-refused")
            if alloc.timed_noexecute_toleration and self.faults.on("toleration-seconds-refused"):
                raise ClaimError(
                    f"{ref}: device {alloc.device} may be evicted (tolerationSeconds): injected fault "
                    "toleration-seconds-refused"
                )
            if self.faults.on("wrong-cdi-device"):
                pairs.append(_neighbour(alloc, snap))
            else:
                pairs.append(_parent(alloc, snap) if self.faults.on("partition-cdi-parent") else (alloc, device))
        pairs = positional.by_position(self._faulty_pairs(pairs), snap, self.faults.on("device-by-position"))
        holds = self._holds(allocs, snap)
        spec, ids = identity.build_spec(ref, pairs, snap, self.faults, self.store.kind)
        leak = self.faults.on("leak-device-to-all-containers")
        mismatch = self.faults.on("kubelet-device-mismatch")
        devices = [
            PreparedDevice(
                () if leak else (a.base_request,),
                a.pool,
                _other_device(snap, a.device) if mismatch else a.device,
                (cid,) if self.store.writes else (),  # --no-cdi: no CDI device named
                a.share_id,
            )
            for (a, _), cid in zip(pairs, ids, strict=True)
        ]
        with self._lock:
            done = self._existing(ref)
            if done is not None:
                return done
            self._refuse_held(ref, holds, snap)
            self._write_spec(ref.uid, spec)
            self._claims[ref.uid] = {
                "namespace": ref.namespace,
                "name": ref.name,
                "devices": [d.to_json() for d in devices],
                "cdiSpec": spec,
                "holds": holds,
            }
            try:
                self.checkpoint.save(self._claims)
            except OSError as err:
                del self._claims[ref.uid]
                self.store.remove(ref.uid)
                raise ClaimError(f"{ref}: writing the checkpoint failed: {err}") from None
        return devices

    def _write_spec(self, uid: str, spec: dict) -> None:
        """Write the claim's CDI spec now, before the answer (fault ``cdi-after-reply``: :data:`CDI_LATE_S`
        seconds after it, if the claim is still prepared then). Called with the lock held."""
        if not self.faults.on("cdi-after-reply"):
            self.store.write(uid, spec)
            return

        def write() -> None:
            with self._lock:
                if uid in self._claims:
                    self.store.write(uid, spec)

        timer = threading.Timer(CDI_LATE_S, write)
        timer.daemon = True
        timer.start()

    def _answer_again(self, ref: ClaimRef, done: list[PreparedDevice]) -> list[PreparedDevice]:
        """The answer to a repeated prepare of ``ref``: ``done`` (faults ``prepare-not-idempotent``: ClaimError;
        ``cdi-ids-change-on-repeat``: its CDI IDs with a counter appended)."""
        if self.faults.on("prepare-not-idempotent"):
            raise ClaimError(f"{ref} is already prepared: injected fault prepare-not-idempotent")
        if self.faults.on("cdi-ids-change-on-repeat"):
            self._repeats += 1
            return [replace(d, cdi_ids=tuple(f"{c}-r{self._repeats}" for c in d.cdi_ids)) for d in done]
        return done

    def _faulty_pairs(self, pairs: list) -> list:
        """``(allocation, device)`` pairs to prepare, changed by faults ``fewer-devices-prepared`` (the first
        only), ``admin-signal-on-normal-claim`` (every allocation marked adminAccess for its CDI env) and
        ``request-names-rotated`` (each allocation under the next one's request name) and ``device-config-sticks``
        (an allocation without config gets its device's last one, :mod:`reference_driver.sticky`)."""
        if self.faults.on("fewer-devices-prepared"):
            pairs = pairs[:1]
        if self.faults.on("admin-signal-on-normal-claim"):
            pairs = [(replace(a, admin_access=True), d) for a, d in pairs]
        if self.faults.on("request-names-rotated"):  # each device answered under the next result's request
            nxt = pairs[1:] + pairs[:1]
            pairs = [(replace(a, request=b.request), d) for (a, d), (b, _) in zip(pairs, nxt, strict=True)]
        if self.faults.on("device-config-sticks"):
            pairs = sticky.stick(pairs, self._last_config)
        return pairs

    def _holds(self, allocs: list[claims.AllocatedDevice], snap: Snapshot) -> sharing.Holds:
        """The physical units ``allocs`` hold (slices of partitions, capacity shares; admin access holds none)."""
        out: sharing.Holds = {}
        exclusive, whole = self.faults.on("share-ignored"), self.faults.on("unprepare-needs-claim-cdi-only")
        for alloc in allocs:
            device = snap.device(alloc.device)
            if whole and not alloc.admin_access and device and not device.allow_multiple_allocations:
                out[alloc.device] = 1  # the device itself, so the fault's kept hold refuses its next claim
            if not alloc.admin_access:
                for unit, amount in sharing.holds(device, alloc.consumed_capacity, exclusive).items():
                    out[unit] = out.get(unit, 0) + amount
        return out

    def _refuse_held(self, ref: ClaimRef, holds: sharing.Holds, snap: Snapshot) -> None:
        """Raise ClaimError when ``holds`` do not fit next to what other prepared claims (and, with the fault
        partition-not-freed, unprepared ones) hold: the hardware could not do it. Caller holds the lock."""
        held = {f"{e['namespace']}/{e['name']}": e.get("holds") or {} for u, e in self._claims.items() if u != ref.uid}
        why = sharing.shortfall(holds, {**held, **self._leaked}, sharing.limits(snap))
        if why:
            raise ClaimError(f"{ref}: the device cannot give this: {why}")

    def _refuse_admin_access_in_use(self, ref: ClaimRef, allocs: list[claims.AllocatedDevice]) -> None:
        """Fault ``admin-access-refused-in-use``: raise ClaimError when an adminAccess device of ``ref`` is
        already prepared for another claim (KEP-5018 says admin access must work on devices in use)."""
        wanted = {(a.pool, a.device) for a in allocs if a.admin_access}
        with self._lock:
            for uid, entry in self._claims.items():
                busy = wanted & {(d["pool"], d["device"]) for d in entry["devices"]}
                if uid != ref.uid and busy:
                    pool, device = sorted(busy)[0]
                    raise ClaimError(
                        f"{ref}: device {pool}/{device} is in use by ResourceClaim {entry['namespace']}/"
                        f"{entry['name']} (injected fault admin-access-refused-in-use)"
                    )

    def _existing(self, ref: ClaimRef) -> list[PreparedDevice] | None:
        """Devices of an already-prepared claim (restoring its CDI spec if it vanished); caller holds the lock."""
        entry = self._claims.get(ref.uid)
        if entry is None:
            return None
        restore = not self.faults.on("cdi-not-restored-after-reboot")
        if restore and not self.store.exists(ref.uid) and entry.get("cdiSpec"):
            self.store.write(ref.uid, entry["cdiSpec"])
        return [PreparedDevice.from_json(d) for d in entry["devices"]]

    def _claim_gone(self, ref: ClaimRef) -> bool:
        """Whether ``ref`` is gone from the API server; asked only under the faults ``unprepare-needs-claim`` and
        ``unprepare-needs-claim-cdi-only`` (False otherwise: a healthy driver never reads the claim here)."""
        if not (self.faults.on("unprepare-needs-claim") or self.faults.on("unprepare-needs-claim-cdi-only")):
            return False
        try:
            self._source.get_claim(ref.namespace, ref.name)
        except LookupError:
            return True
        return False

    def unprepare(self, uid: str, ref: ClaimRef | None = None) -> None:
        """Unprepare one claim (idempotent; unknown UID = success); ``ref`` (the kubelet's namespace/name) is only
        read by the faults ``unprepare-needs-claim`` (fails while the API object is gone) and
        ``unprepare-needs-claim-cdi-only`` (then removes the CDI spec but keeps the devices held). Raises
        UnprepareError."""
        if self.faults.on("unprepare-error"):
            raise UnprepareError(f"claim UID {uid}: injected fault unprepare-error")
        gone = ref is not None and self._claim_gone(ref)
        if gone and self.faults.on("unprepare-needs-claim"):
            raise UnprepareError(f"{ref} is gone from the API server: injected fault unprepare-needs-claim")
        with self._lock:
            entry = self._claims.pop(uid, None)
            if entry is None and self.faults.on("unprepare-unknown-error"):
                raise UnprepareError(f"claim UID {uid} is not prepared here: injected fault unprepare-unknown-error")
            if entry is None and (self.faults.on("forget-prepared-on-restart") or self._forgot):
                return  # the fault's driver only cleans up what it remembers: a left-over CDI spec stays
            if entry is not None and (gone or self.faults.on("partition-not-freed")):
                kept = {k: v for k, v in (entry.get("holds") or {}).items() if gone or "/slice" in k}
                self._leaked[f"unprepared {entry['namespace']}/{entry['name']}"] = kept
            try:
                if entry is not None:
                    self.checkpoint.save(self._claims)
            except OSError as err:
                self._claims[uid] = entry
                raise UnprepareError(f"claim UID {uid}: writing the checkpoint failed: {err}") from None
            if not self.faults.on("unprepare-keeps-cdi"):
                others = self.store.claim_uids() - {uid} if self.faults.on("unprepare-removes-other-cdi") else set()
                try:
                    self.store.remove(uid)
                    for other in sorted(others):  # a cleanup by glob: every claim's spec goes
                        self.store.remove(other)
                except OSError as err:
                    raise UnprepareError(f"claim UID {uid}: removing its CDI spec failed: {err}") from None
        if entry is not None and self.on_unprepared is not None:
            self.on_unprepared([d["device"] for d in entry["devices"]])


def _parent(alloc: claims.AllocatedDevice, snap: Snapshot) -> tuple[claims.AllocatedDevice, Device | None]:
    """Fault ``partition-cdi-parent``: for a partition, its parent GPU (the device whose ``uuid`` is the
    partition's ``parentUUID``) in place of the allocated partition; other devices unchanged."""
    device = snap.device(alloc.device)
    parent_uuid = device.attribute("parentUUID") if device else None
    parent = next((d for d in snap.devices if parent_uuid and d.attribute("uuid") == parent_uuid), None)
    return (replace(alloc, device=parent.name), parent) if parent else (alloc, device)


def _other_device(snap: Snapshot, device: str) -> str:
    """Fault ``kubelet-device-mismatch``: the first other device of the node (``device`` itself when the node
    has no other), reported to the kubelet instead of the allocated one."""
    others = sorted(d.name for d in snap.devices if d.name != device)
    return others[0] if others else device
