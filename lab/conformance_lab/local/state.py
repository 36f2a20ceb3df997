"""The on-disk record of a local cluster (``/var/lib/dra-conformance/clusters/<name>/state.json``), written
atomically after every change so ``cluster down`` or ``status`` in another process sees every process,
bridge, cgroup and directory the cluster made.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import threading
from pathlib import Path

from conformance.core.errors import ClusterUnavailable
from conformance_lab.local.config import RUN_ROOT, STATE_ROOT
from conformance_lab.local.processes import HostProcess

SCHEMA = 1


@dataclasses.dataclass
class ClusterState:
    """Everything ``down`` needs. ``processes`` are in start order; ``host`` records host changes
    (``ip_forward`` previous value, ``kube_proxy`` binary if it ran)."""

    name: str
    slot: int
    nodes: int
    log_dir: str
    k8s_version: str = ""
    feature_gate_mode: str = ""
    feature_gates: dict[str, bool] = dataclasses.field(default_factory=dict)
    runtime_config: str = ""
    node_ip: str = ""
    images: dict[str, str] = dataclasses.field(default_factory=dict)
    binaries: dict[str, str] = dataclasses.field(default_factory=dict)
    kwok_nodes: list[str] = dataclasses.field(default_factory=list)
    processes: list[HostProcess] = dataclasses.field(default_factory=list)
    host: dict = dataclasses.field(default_factory=dict)
    phase: str = "starting"
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def path(self) -> Path:
        return STATE_ROOT / self.name / "state.json"

    def save(self) -> None:
        """Atomic write (tmp + fsync + rename)."""
        with self._lock:
            data = {
                f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("processes", "_lock")
            }
            data["processes"] = [p.to_dict() for p in self.processes]
            data["schema"] = SCHEMA
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)

    def add_process(self, proc: HostProcess) -> HostProcess:
        """Record ``proc`` (replacing one with the same node and name) and save."""
        self.processes = [p for p in self.processes if (p.node, p.name) != (proc.node, proc.name)] + [proc]
        proc.on_change = lambda _p: self.save()
        self.save()
        return proc

    def process(self, name: str, node: str = "") -> HostProcess | None:
        return next((p for p in self.processes if p.name == name and p.node == node), None)

    @classmethod
    def load(cls, name: str) -> ClusterState:
        """Read the state of cluster ``name``; raises FileNotFoundError naming the path when absent."""
        path = STATE_ROOT / name / "state.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"no local cluster named {name!r} ({path} does not exist)") from None
        procs = [HostProcess.from_dict(p) for p in data.pop("processes", [])]
        data.pop("schema", None)
        fields = {f.name for f in dataclasses.fields(cls)}
        state = cls(**{k: v for k, v in data.items() if k in fields})
        state.processes = procs
        for p in procs:
            p.on_change = lambda _p: state.save()
        return state


def existing_clusters() -> list[str]:
    """Names of clusters with a state file on this host."""
    if not STATE_ROOT.is_dir():
        return []
    return sorted(p.parent.name for p in STATE_ROOT.glob("*/state.json"))


class SlotTaken(ClusterUnavailable):
    """Another local cluster recorded the same slot first (two runs chose it at once); pick another."""


def slots_in_use(exclude: str = "") -> dict[int, str]:
    """``{slot: cluster name}`` of the clusters with a readable state file on this host, except ``exclude``."""
    used: dict[int, str] = {}
    for other in existing_clusters():
        if other == exclude:
            continue
        try:
            used[ClusterState.load(other).slot] = other
        except (OSError, ValueError, KeyError):
            continue
    return used


@contextlib.contextmanager
def host_lock():
    """Exclusive host-wide lock (``/run/dra-conformance/host.lock``) for decisions that span clusters."""
    RUN_ROOT.mkdir(parents=True, exist_ok=True)
    with open(RUN_ROOT / "host.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
