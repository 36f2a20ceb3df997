"""Host processes of a local cluster: started in their own session (process group), output appended to a
log file, identified by (pid, start time) so a later process (``cluster down``) never signals a reused pid.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from conformance.core.commands import signals_deferred


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), or None when the pid does not exist."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(raw.rsplit(")", 1)[1].split()[19])


def alive(pid: int, started: int | None) -> bool:
    """True when ``pid`` runs, is not a zombie, and (if given) has the recorded start time."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = raw.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return started is None or int(fields[19]) == started


@dataclasses.dataclass
class HostProcess:
    """A process started for the cluster (component, or e.g. a DRA kubelet plugin in host mode).

    name/node: labels (node "" for cluster-wide components); pid/started: identity; log_path: stdout+stderr;
    argv/env: how to start it again (:meth:`restart`). ``on_change`` (not persisted) is told about restarts.
    """

    name: str
    node: str
    pid: int
    started: int | None
    log_path: Path
    argv: list[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    on_change: Callable[[HostProcess], None] | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def spawn(
        cls,
        name: str,
        node: str,
        argv: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> HostProcess:
        """Start ``argv`` in a new session; raises FileNotFoundError/PermissionError from exec."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        full_env = dict(os.environ, **(env or {}))
        with open(log_path, "ab") as log:
            log.write(f"\n==== {time.strftime('%H:%M:%S')} start: {' '.join(argv)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
            )
        return cls(
            name=name,
            node=node,
            pid=proc.pid,
            started=start_time(proc.pid),
            log_path=log_path,
            argv=list(argv),
            env=env,
            cwd=cwd,
        )

    def is_running(self) -> bool:
        """True while the process (with its recorded start time) exists and is not a zombie."""
        return alive(self.pid, self.started)

    def stop(self, timeout: float = 10.0, graceful: bool = True) -> None:
        """SIGTERM the process group, wait up to ``timeout`` seconds, then SIGKILL it. Idempotent. ``graceful``
        False: SIGKILL at once, as a crash ends it (no shutdown code runs: e.g. no leader lease released)."""
        if not self.is_running():
            return
        steps = ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)) if graceful else ((signal.SIGKILL, 5.0),)
        for sig, wait in steps:
            for target in (lambda: os.killpg(self.pid, sig), lambda: os.kill(self.pid, sig)):  # noqa: B023 - called now
                try:
                    target()
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not self.is_running():
                    return
                time.sleep(0.05)
        if self.is_running():
            raise RuntimeError(f"{self.name} (pid {self.pid}) survived SIGKILL")

    def restart(self) -> HostProcess:
        """Stop, then start the same argv again; returns self with the new pid."""
        self.stop()
        with signals_deferred():  # the new pid is recorded (on_change) before an interrupt can act
            new = HostProcess.spawn(self.name, self.node, self.argv, self.log_path, self.env, self.cwd)
            self.pid, self.started = new.pid, new.started
            if self.on_change:
                self.on_change(self)
        return self

    def tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the log (for error messages)."""
        try:
            data = self.log_path.read_bytes()[-20000:].decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(data.splitlines()[-lines:])

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "node": self.node,
            "pid": self.pid,
            "started": self.started,
            "log_path": str(self.log_path),
            "argv": self.argv,
            "env": self.env,
            "cwd": self.cwd,
        }

    @classmethod
    def from_dict(cls, d: dict) -> HostProcess:
        return cls(
            name=d["name"],
            node=d["node"],
            pid=d["pid"],
            started=d.get("started"),
            log_path=Path(d["log_path"]),
            argv=list(d["argv"]),
            env=d.get("env"),
            cwd=d.get("cwd"),
        )


def processes_matching(needle: str) -> list[int]:
    """Pids whose command line contains ``needle`` (e.g. a containerd socket path, to find its shims)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry.name))
    return found


def _ancestors() -> set[int]:
    """This process and its parents up to pid 1 (from /proc/<pid>/stat, field 4)."""
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def strays(*dirs: Path, spared: tuple[str, ...] = ("admin.kubeconfig",)) -> list[int]:
    """Pids whose command line names a path inside one of ``dirs`` (``<dir>/...``: a cluster ``dra`` never matches
    ``dra2``'s), except this process and its parents, and except where every such path is a file of ``spared``
    (the admin kubeconfig: a user's ``kubectl`` or a run against the cluster is not part of it). What tear-down
    kills last: components no state records, e.g. started by a bring-up interrupted before recording them."""
    prefixes = tuple(f"{str(d).rstrip('/')}/" for d in dirs)
    mine, found = _ancestors(), []
    for pid in {pid for prefix in prefixes for pid in processes_matching(prefix)} - mine:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        named = [a for a in args for prefix in prefixes if prefix in a]
        if any(not a.endswith(tuple(f"/{f}" for f in spared)) for a in named):
            found.append(pid)
    return sorted(found)


def kill_pids(pids: list[int]) -> None:
    """SIGKILL every pid (ignoring those already gone)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
