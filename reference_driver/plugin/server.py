"""The two unix-socket gRPC servers of the kubelet plugin.

Order (dra-protocols.md §7.2): the DRA service socket ``<plugins_dir>/<driver>/dra.sock`` (v1 + v1beta1)
is served first, then the registration socket ``<registry_dir>/<driver>-reg.sock`` is created; the
kubelet's fsnotify watcher picks it up. On stop the registration socket goes first (de-registers the
plugin), then the DRA socket. Stale socket files from a crashed run are removed before binding.

The kubelet sends its verdict (NotifyRegistrationStatus) once, with a 5 s deadline, and never again: when that
call fails (DeadlineExceeded under load, seen in session 13) the kubelet has registered the plugin but the plugin
never hears it, and its readiness stays false for good. So a GetInfo that no status followed within
:data:`REOFFER_AFTER_S` makes the server offer its registration socket again (a new socket file: the kubelet's
watcher sees a create, gives it a new UUID, and its reconciler unregisters and registers the plugin again), at
most :data:`REOFFER_MOST` times. Source: kubelet pkg/kubelet/pluginmanager (operationexecutor/
operation_generator.go: ``notifyTimeoutDuration`` 5 s, the plugin added to the actual state before the
notification; reconciler/reconciler.go: a plugin whose socket UUID changed is unregistered and registered again).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from ..faults import Faults
from ..inventory.base import Snapshot
from ..state import DeviceState
from . import dra_v1, dra_v1beta1, wire
from .dra import DraService
from .health import HealthService
from .registration import RegistrationService, dra_versions

log = logging.getLogger(__name__)
MAX_SOCKET_PATH = 105  # sun_path is 108 bytes incl. NUL; grpc-python refuses 106 and 107 (measured)
REGISTERED_MARKER = "registered-once"  # fault no-reregister: written next to the checkpoint at the first start
REOFFER_AFTER_S = 15.0  # seconds after an unanswered GetInfo before the socket is offered again (kubelet: 5 s)
REOFFER_MOST = 5  # re-offers at most per start (then the kubelet's log and ours say why)


class SocketPathError(ValueError):
    """A socket path is too long for AF_UNIX; the message names it and the limit."""


@dataclass(frozen=True)
class SocketPaths:
    """Where the plugin listens."""

    registration: Path
    dra: Path

    @classmethod
    def for_driver(cls, registry_dir: Path, plugins_dir: Path, driver: str, instance: str = "") -> SocketPaths:
        """Conventional layout of the Go kubeletplugin library (``<driver>-reg.sock``,
        ``<driver>/dra.sock``); with ``instance`` (a pod UID: the library's ``RollingUpdate(uid)`` option)
        ``<driver>-<instance>-reg.sock`` and ``<driver>/dra-<instance>.sock``, so an old and a new instance
        of a DaemonSet rolling update with maxSurge listen side by side and neither unlinks the other's
        socket (kubelet pluginwatcher README "Seamless Upgrade"). Where a path would exceed the AF_UNIX
        limit, the driver name in it is replaced by a short hash (as the Go library does for long names).
        Raises SocketPathError when even that is too long."""
        short = hashlib.sha256(driver.encode()).hexdigest()[:12]
        tail = f"-{instance}" if instance else ""
        reg = _fit(Path(registry_dir) / f"{driver}{tail}-reg.sock", Path(registry_dir) / f"{short}{tail}-reg.sock")
        dra = _fit(Path(plugins_dir) / driver / f"dra{tail}.sock", Path(plugins_dir) / short / f"dra{tail}.sock")
        return cls(reg, dra)


def _fit(preferred: Path, fallback: Path) -> Path:
    for path in (preferred, fallback):
        if len(str(path.absolute())) <= MAX_SOCKET_PATH:
            return path
    raise SocketPathError(
        f"socket path {fallback} is longer than {MAX_SOCKET_PATH} bytes (AF_UNIX limit); "
        "use shorter --plugin-registry-dir/--plugins-dir"
    )


def _bind(server: grpc.Server, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_socket():
        path.unlink()
    if server.add_insecure_port(f"unix://{path.absolute()}") == 0:
        raise OSError(f"cannot listen on unix socket {path}")


HEALTH_VERSIONS = ("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")


class PluginServer:
    """Registration + DRA servers for one driver instance.

    With ``health`` (a callable returning the inventory snapshot) the DRA socket also serves
    DRAResourceHealth v1 and v1alpha1, and GetInfo advertises them after the DRA services.
    ``after_prepare(ref, devices)``: called after each successfully prepared claim (device status).
    ``unhealthy()``: the device names the health stream reports UNHEALTHY (the runtime switch).
    """

    def __init__(
        self,
        driver: str,
        state: DeviceState,
        paths: SocketPaths,
        workers: int = 8,
        health: Callable[[], Snapshot] | None = None,
        pool: str = "",
        faults: Faults = Faults(),
        health_interval: float = 10.0,
        after_prepare: Callable | None = None,
        unhealthy: Callable[[], frozenset[str]] = frozenset,
        reoffer_after: float = REOFFER_AFTER_S,
    ) -> None:
        self.driver, self.state, self.paths = driver, state, paths
        self.reoffer_after, self.reoffers = reoffer_after, 0
        self._reg_lock = threading.Lock()  # a re-offer and stop() never interleave
        self._stopping = threading.Event()
        self.health: dict[str, HealthService] = {}
        if health is not None:
            self.health = {
                version: HealthService(msgs, pool, health, self._stopping, faults, health_interval, unhealthy)
                for version, msgs in (("v1", wire.health_v1()), ("v1alpha1", wire.health_v1alpha1()))
            }
        versions = dra_versions(faults) + (HEALTH_VERSIONS if self.health else ())
        self.registration = RegistrationService(driver, str(paths.dra.absolute()), versions)
        self.services: dict[str, DraService] = {
            "v1": dra_v1.service(state, self._stopping),
            "v1beta1": dra_v1beta1.service(state, self._stopping),
        }
        for service in self.services.values():
            service.after_prepare = after_prepare
        self._workers = workers
        self._faults = faults
        self._dra: grpc.Server | None = None
        self._reg: grpc.Server | None = None

    def start(self) -> None:
        """Serve DRA, then registration. Raises OSError when a socket cannot be bound."""
        self._stopping.clear()
        self._dra = grpc.server(futures.ThreadPoolExecutor(self._workers, thread_name_prefix="dra"))
        for service in [*self.services.values(), *self.health.values()]:
            self._dra.add_generic_rpc_handlers((service.handler(),))
        _bind(self._dra, self.paths.dra)
        self._dra.start()
        if self._skip_registration():
            return
        self._serve_registration()
        log.info(
            "serving DRA %s on %s, registration on %s", "+".join(self.services), self.paths.dra, self.paths.registration
        )
        threading.Thread(target=self._watch_registration, name="reg-watch", daemon=True).start()

    def _serve_registration(self) -> None:
        self._reg = grpc.server(futures.ThreadPoolExecutor(2, thread_name_prefix="reg"))
        self._reg.add_generic_rpc_handlers((self.registration.handler(),))
        _bind(self._reg, self.paths.registration)
        self._reg.start()

    def _watch_registration(self) -> None:
        """Offer the registration socket again when the kubelet asked (GetInfo) but sent no status within
        ``reoffer_after`` seconds (see the module docstring); ends on stop or after :data:`REOFFER_MOST`."""
        while not self._stopping.wait(min(1.0, self.reoffer_after / 4)):
            asked = self.registration.unanswered_since()
            if asked is None or time.monotonic() - asked < self.reoffer_after:
                continue
            if self.reoffers >= REOFFER_MOST:
                log.error("the kubelet sent no registration status after %d re-offers; see its log", self.reoffers)
                return
            self.reoffers += 1
            log.warning(
                "the kubelet asked for the plugin info %.0f s ago but sent no registration status (its "
                "NotifyRegistrationStatus is never retried); offering %s again (%d/%d)",
                time.monotonic() - asked, self.paths.registration, self.reoffers, REOFFER_MOST,
            )  # fmt: skip
            self.registration.forget_asked()
            with self._reg_lock:
                if self._stopping.is_set() or self._reg is None:
                    return
                self.paths.registration.unlink(missing_ok=True)  # the kubelet unregisters it ...
                self._reg.stop(0).wait()
                self._serve_registration()  # ... and registers the new socket file

    def _skip_registration(self) -> bool:
        """Fault ``no-reregister``: True (logged) when a previous start in this state directory left its marker;
        the first start with the fault writes the marker and registers."""
        if not self._faults.on("no-reregister"):
            return False
        marker = self.state.checkpoint.path.with_name(REGISTERED_MARKER)
        if marker.exists():
            log.warning("fault no-reregister: %s exists, not creating %s", marker, self.paths.registration)
            return True
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        return False

    def stop(self, grace: float = 2.0) -> None:
        """Remove the registration socket, end health streams, stop both servers, remove the DRA socket."""
        self._stopping.set()
        with self._reg_lock:
            if self._reg is not None:
                self.paths.registration.unlink(missing_ok=True)
                self._reg.stop(grace).wait()
                self._reg = None
        if self._dra is not None:
            self._dra.stop(grace).wait()
            self._dra = None
            self.paths.dra.unlink(missing_ok=True)

    def __enter__(self) -> PluginServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def socket_exists(path: Path) -> bool:
    """True when ``path`` is a unix socket (what the kubelet's watcher considers)."""
    try:
        return os.path.exists(path) and Path(path).is_socket()
    except OSError:
        return False
