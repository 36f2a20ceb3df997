"""``python -m reference_driver`` / ``dra-reference-driver``: wiring only.

Start-up: config -> inventory -> state (recover from checkpoint) -> gRPC servers (DRA, then registration)
-> ResourceSlice publisher thread; SIGTERM/SIGINT stop it in reverse order. Slices are left in place on
exit: the kubelet wipes them 30 s after the plugin is gone, and a quick restart keeps them (PUB-07).
Exit codes: 0 clean stop, 2 bad configuration, 1 start-up failure.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING

from . import inventory
from .cdi import CdiStore, DeferredRemovalCdiStore, UnnamedCdiStore
from .checkpoint import Checkpoint, CheckpointError
from .config import ConfigError, from_args
from .inventory.renamed import RenamingSnapshot

if TYPE_CHECKING:  # grpc and kubernetes stay lazily imported (see main)
    from .plugin.server import PluginServer
    from .publisher import SlicePublisher
    from .state import DeviceState

log = logging.getLogger("reference_driver")


def main(argv: list[str] | None = None) -> int:
    """Run the plugin until SIGTERM/SIGINT."""
    try:
        cfg = from_args(argv)
        inv = inventory.load(cfg.device_config, cfg.node_name)
    except (ConfigError, inventory.InventoryError) as err:
        print(f"dra-reference-driver: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=cfg.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # the stop handlers before any socket exists: a SIGTERM that follows the registration socket's appearance at once
    # (a kubelet, a test) stops the plugin cleanly instead of killing it with the default action
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # grpc and kubernetes are imported only here, keeping the pure modules importable without them
    from .claimstatus import BindingController, DeviceStatusReporter  # noqa: PLC0415
    from .kube import ApiClaimSource, ClaimStatusWriter, api_client, unhealthy_switch  # noqa: PLC0415
    from .plugin.server import PluginServer, SocketPaths  # noqa: PLC0415
    from .publisher import SlicePublisher  # noqa: PLC0415
    from .state import DeviceState  # noqa: PLC0415

    log.info(
        "driver %s on node %s, inventory %s, faults: %s, device status: %s, binding conditions: %s",
        cfg.driver_name,
        cfg.node_name,
        inv.kind,
        cfg.faults.describe(),
        "on" if cfg.device_status else "off",
        ("on, attach fails for " + ",".join(sorted(cfg.binding_failure_devices)))
        if cfg.binding_failure_devices
        else ("on" if cfg.binding_conditions else "off"),
    )
    try:
        api = api_client(cfg.kubeconfig)
        instance = "" if cfg.faults.on("surge-socket-collision") else cfg.rolling_update_uid
        paths = SocketPaths.for_driver(cfg.plugin_registry_dir, cfg.plugins_dir, cfg.driver_name, instance)
        renaming = RenamingSnapshot(inv.snapshot) if cfg.faults.on("renamed-after-unprepare") else None
        snapshot = renaming or inv.snapshot
        state = DeviceState(
            cfg.driver_name,
            {cfg.node_name},
            snapshot,
            ApiClaimSource(api),
            _cdi_store(cfg),
            Checkpoint(cfg.checkpoint_path, cfg.checkpoint_format),
            cfg.faults,
            on_unprepared=renaming.rename if renaming else None,
        )
        report = state.recover()
        log.info(
            "checkpoint: %d prepared claim(s), CDI specs rewritten: %s%s",
            report.claims,
            list(report.rewritten),
            f", quarantined {report.quarantined}" if report.quarantined else "",
        )
        writer = ClaimStatusWriter(api)
        reporter = DeviceStatusReporter(writer, cfg.driver_name, cfg.faults) if cfg.device_status else None
        server = PluginServer(
            cfg.driver_name,
            state,
            paths,
            health=snapshot,
            pool=cfg.node_name,
            faults=cfg.faults,
            after_prepare=reporter,
            unhealthy=unhealthy_switch(api, cfg.node_name, cfg.driver_name),
        )
        server.start()
        if cfg.ready_file is not None:
            threading.Thread(
                target=_mark_ready, args=(server.registration.registered, cfg.ready_file), daemon=True
            ).start()
    except (CheckpointError, OSError, ValueError) as err:
        log.error("start-up failed: %s", err)
        return 1
    publisher = SlicePublisher(
        api,
        cfg.node_name,
        cfg.driver_name,
        snapshot,
        cfg.faults,
        cfg.resync_seconds,
        binding_conditions=cfg.binding_conditions,
    )
    if renaming is not None:
        renaming.on_rename = publisher.sync_with_retry  # the renamed devices are published at once
    if cfg.faults.on("slices-churn-on-use"):
        _churn_on_use(state, server, publisher)
    thread = threading.Thread(target=publisher.run, name="slices", daemon=True)
    thread.start()
    binder = (
        BindingController(writer, cfg.driver_name, cfg.node_name, cfg.faults, failing=cfg.binding_failure_devices)
        if cfg.binding_conditions
        else None
    )
    if binder is not None:
        threading.Thread(target=binder.run, name="binding", daemon=True).start()
    stop.wait()
    log.info("stopping")
    publisher.stop()
    if binder is not None:
        binder.stop()
    server.stop()
    return 0


def _churn_on_use(state: DeviceState, server: PluginServer, publisher: SlicePublisher) -> None:
    """Fault ``slices-churn-on-use``: the publisher republishes the pool after every prepared and unprepared
    claim (after the device-status writer, when there is one)."""
    state.on_unprepared = publisher.used
    for service in server.services.values():
        status = service.after_prepare

        def after(ref, devices, status=status) -> None:
            if status is not None:
                status(ref, devices)
            publisher.used()

        service.after_prepare = after


def _mark_ready(registered: threading.Event, path) -> None:
    """Write ``path`` once the kubelet has registered the plugin (the chart's readiness probe reads it)."""
    registered.wait()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("registered\n")
    log.info("registered with the kubelet: wrote %s", path)


def _cdi_store(cfg) -> CdiStore:
    """The claims' CDI spec store: none written under --no-cdi, unless fault cdi-undeclared (specs as usual) or
    cdi-undeclared-by-name (specs without the claim UID, no CDI device named) ignores the flag; under fault
    unprepare-cdi-deferred a spec is deleted a minute after its unprepare."""
    if cfg.no_cdi and cfg.faults.on("cdi-undeclared-by-name"):
        return UnnamedCdiStore(cfg.cdi_dir, cfg.driver_name, writes=False)
    store = DeferredRemovalCdiStore if cfg.faults.on("unprepare-cdi-deferred") else CdiStore
    return store(cfg.cdi_dir, cfg.driver_name, writes=not cfg.no_cdi or cfg.faults.on("cdi-undeclared"))


if __name__ == "__main__":
    sys.exit(main())
