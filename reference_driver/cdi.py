"""CDI specs, one file per prepared claim, with one device entry per allocated device.

Spec shape (CDI spec 0.5.0: the lowest version allowing device names that start with a digit, accepted by
every containerd that can do DRA): ``kind`` ``gpu.dra-conformance.test/gpu``; device name
``<claim UID>-<device>[-<shareID prefix>]``; edits: env vars naming the device, its pool, request, claim,
uuid, the applied sharing configuration and its sources, admin access, share ID and consumed capacity,
plus the free-form env of the applied GpuConfig; device nodes for real GPUs.
Env contract for containers (SAN = device name upper-cased, non-alphanumerics -> ``_``)::

    DRA_GPU_DEVICE_<SAN>=<device>            DRA_GPU_<SAN>_SHARING_STRATEGY=<strategy>
    DRA_GPU_<SAN>_POOL / _REQUEST / _CLAIM / _UUID / _CONFIG_SOURCES / _TIMESLICE_INTERVAL /
    _PARTITION_COUNT / _ADMIN_ACCESS / _SHARE_ID / _CONSUMED_<CAPACITY>;  DRA_ADMIN_ACCESS=true (admin)

Sources: CDI SPEC.md (spec format, names), dra-protocols.md §4; KEP-5018 admin access.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

from . import DRIVER_NAME, files, opaque
from .claims import AllocatedDevice, ClaimRef
from .inventory.base import Device

CDI_VERSION = "0.5.0"
CDI_KIND = f"{DRIVER_NAME}/gpu"  # kind of the default driver name
_SAN = re.compile(r"[^A-Za-z0-9]")


def env_key(device: str, share_id: str | None = None) -> str:
    """The env-name fragment of a device (and share): ``gpu-0`` -> ``GPU_0``."""
    base = device if not share_id else f"{device}_{share_id[:8]}"
    return _SAN.sub("_", base).upper()


def kind_for(driver: str) -> str:
    """CDI kind of a driver: ``<driver>/gpu``."""
    return f"{driver}/gpu"


def device_id(name: str, kind: str = CDI_KIND) -> str:
    """Fully-qualified CDI device ID, ``gpu.dra-conformance.test/gpu=<name>``."""
    return f"{kind}={name}"


def device_env(ref: ClaimRef, alloc: AllocatedDevice, device: Device | None) -> list[str]:
    """The env entries (``NAME=value``) one allocated device puts into a container."""
    key = env_key(alloc.device, alloc.share_id)
    sharing = alloc.config.sharing
    env = [
        f"DRA_GPU_DEVICE_{key}={alloc.device}",
        f"DRA_GPU_{key}_POOL={alloc.pool}",
        f"DRA_GPU_{key}_REQUEST={alloc.request}",
        f"DRA_GPU_{key}_CLAIM={ref.namespace}/{ref.name}",
        f"DRA_GPU_{key}_SHARING_STRATEGY={sharing.strategy if sharing else opaque.DEFAULT_STRATEGY}",
        f"DRA_GPU_{key}_CONFIG_SOURCES={','.join(alloc.config_sources) or 'none'}",
    ]
    uuid = device.attribute("uuid") if device else None
    if uuid:
        env.append(f"DRA_GPU_{key}_UUID={uuid}")
    if sharing and sharing.interval:
        env.append(f"DRA_GPU_{key}_TIMESLICE_INTERVAL={sharing.interval}")
    if sharing and sharing.partition_count:
        env.append(f"DRA_GPU_{key}_PARTITION_COUNT={sharing.partition_count}")
    if alloc.admin_access:
        env += [f"DRA_GPU_{key}_ADMIN_ACCESS=true", "DRA_ADMIN_ACCESS=true"]
    if alloc.share_id:
        env.append(f"DRA_GPU_{key}_SHARE_ID={alloc.share_id}")
    for cap, value in alloc.consumed_capacity:
        env.append(f"DRA_GPU_{key}_CONSUMED_{_SAN.sub('_', cap).upper()}={value}")
    env += [f"{name}={value}" for name, value in alloc.config.env]
    return env


def node_edits(device: Device) -> list[dict]:
    """The CDI ``deviceNodes`` of ``device``: ``{"path"}`` each, with ``hostPath`` when a host node backs it
    (``Device.node_host``: a simulated GPU's ``/dev/dra-gpu-0`` is the host's ``/dev/null``). Source: CDI SPEC.md
    ``containerEdits.deviceNodes`` (``hostPath`` defaults to ``path``)."""
    host = {"hostPath": device.node_host} if device.node_host else {}
    return [{"path": p, **host} for p in device.device_nodes]


def build_spec(
    ref: ClaimRef, allocs: list[tuple[AllocatedDevice, Device | None]], skip_env: bool = False, kind: str = CDI_KIND
) -> tuple[dict, list[str]]:
    """The CDI spec for one claim and the CDI device ID of each allocation (same order); ``kind`` is
    ``<driver>/gpu``.

    ``skip_env`` (fault ``skip-cdi-env``) replaces the device env by a marker entry.
    """
    entries, ids, seen = [], [], set()
    for alloc, device in allocs:
        name = f"{ref.uid}-{alloc.device}" + (f"-{alloc.share_id[:8]}" if alloc.share_id else "")
        while name in seen:
            name += "-x"
        seen.add(name)
        env = ["DRA_REFERENCE_FAULT=skip-cdi-env"] if skip_env else device_env(ref, alloc, device)
        edits: dict = {"env": env}
        if device and device.device_nodes:
            edits["deviceNodes"] = node_edits(device)
        entries.append({"name": name, "containerEdits": edits})
        ids.append(device_id(name, kind))
    return {"cdiVersion": CDI_VERSION, "kind": kind, "devices": entries}, ids


def retargeted(entry: dict, old: Device, new: Device) -> dict:
    """Fault ``upgrade-rewrites-cdi-spec``: the spec's device entry (``{"name", "containerEdits"}``) written for
    ``old``, rewritten to inject ``new`` under the same name (so the CDI ID the kubelet holds for the claim now
    resolves to ``new``): env keys and values naming ``old`` (its env key, name, uuid) name ``new``, and the
    device nodes are ``new``'s. Returns a new dict; ``entry`` is not changed."""
    old_key, new_key = env_key(old.name), env_key(new.name)
    words = [(old.name, new.name)]
    if old.attribute("uuid") and new.attribute("uuid"):
        words.append((str(old.attribute("uuid")), str(new.attribute("uuid"))))
    env = []
    for item in (entry.get("containerEdits") or {}).get("env") or []:
        key, sep, value = item.partition("=")
        for prefix in ("DRA_GPU_DEVICE_", "DRA_GPU_"):
            head = prefix + old_key
            if key == head or key.startswith(head + "_"):
                key = prefix + new_key + key[len(head) :]
                break
        for was, now in words:
            value = re.sub(rf"(?<![\w-]){re.escape(was)}(?![\w-])", now, value)
        env.append(key + sep + value)
    edits = {**(entry.get("containerEdits") or {}), "env": env}
    edits.pop("deviceNodes", None)
    if new.device_nodes:
        edits["deviceNodes"] = node_edits(new)
    return {**entry, "containerEdits": edits}


class CdiStore:
    """Per-claim CDI spec files of one driver in one CDI spec directory (e.g. ``/var/run/cdi``)."""

    def __init__(self, directory: Path, driver: str = DRIVER_NAME, writes: bool = True) -> None:
        self.directory, self.driver, self.kind = Path(directory), driver, kind_for(driver)
        self.writes = writes  # False (--no-cdi): no spec is written and prepare names no CDI device

    def path(self, claim_uid: str) -> Path:
        """Spec file of a claim: ``<dir>/<driver>_claim-<uid>.json``."""
        return self.directory / f"{self.driver}_claim-{claim_uid}.json"

    def write(self, claim_uid: str, spec: dict) -> Path:
        """Write the claim's spec atomically (JSON), unless the store :attr:`writes` nothing. Raises OSError."""
        path = self.path(claim_uid)
        if not self.writes:
            return path
        files.write_atomic(path, json.dumps(spec, indent=1, sort_keys=True).encode())
        return path

    def remove(self, claim_uid: str) -> bool:
        """Delete the claim's spec; True if it existed."""
        return files.remove(self.path(claim_uid))

    def exists(self, claim_uid: str) -> bool:
        """True when the claim's spec file is present."""
        return self.path(claim_uid).is_file()

    def claim_uids(self) -> set[str]:
        """UIDs of all claims this driver has spec files for."""
        prefix, suffix = f"{self.driver}_claim-", ".json"
        return {p.name[len(prefix) : -len(suffix)] for p in self.directory.glob(f"{prefix}*{suffix}")}


class UnnamedCdiStore(CdiStore):
    """Fault ``cdi-undeclared-by-name``: a store that, under ``--no-cdi``, still writes each claim's spec, but
    without the claim UID anywhere (file ``<driver>_spec-<token>.json``, device names ``<token>-<device>``,
    token = the first 12 hex digits of the UID's SHA-256), and names no CDI device in prepare (:attr:`writes`
    stays False): a look for the claim UID finds nothing, only the files' appearance shows the CDI use."""

    def path(self, claim_uid: str) -> Path:
        """Spec file of a claim, named by a token of its UID: ``<dir>/<driver>_spec-<token>.json``."""
        return self.directory / f"{self.driver}_spec-{_token(claim_uid)}.json"

    def write(self, claim_uid: str, spec: dict) -> Path:
        """Write the claim's spec with every occurrence of its UID replaced by the token. Raises OSError."""
        text = json.dumps(spec, indent=1, sort_keys=True).replace(claim_uid, _token(claim_uid))
        files.write_atomic(self.path(claim_uid), text.encode())
        return self.path(claim_uid)


def _token(claim_uid: str) -> str:
    """A UID-less stand-in for ``claim_uid``: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(claim_uid.encode()).hexdigest()[:12]


DEFERRED_REMOVAL_S = 60.0  # fault unprepare-cdi-deferred: how long a claim's spec outlives its unprepare


class DeferredRemovalCdiStore(CdiStore):
    """Fault ``unprepare-cdi-deferred``: :meth:`remove` answers at once and deletes the spec only
    :data:`DEFERRED_REMOVAL_S` seconds later on a daemon timer, as a driver with a background cleanup loop does;
    a process that stops before then (an uninstall) leaves the spec on the node for good."""

    def remove(self, claim_uid: str) -> bool:
        """Schedule the deletion of the claim's spec; True if it exists now."""
        timer = threading.Timer(DEFERRED_REMOVAL_S, files.remove, (self.path(claim_uid),))
        timer.daemon = True
        timer.start()
        return self.exists(claim_uid)
