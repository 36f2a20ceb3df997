"""Flags and environment -> :class:`Config` (validated once). All paths come from flags, so the same
program runs as a host process next to a local kubelet or in a DaemonSet pod with hostPath mounts.

Environment fallbacks: ``NODE_NAME`` for ``--node-name``, ``DRA_REFERENCE_FAULTS`` (merged with
``--faults``), ``KUBECONFIG`` is *not* read implicitly: without ``--kubeconfig`` the in-cluster service
account is used.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from . import DRIVER_NAME
from .faults import FAULTS, Faults, UnknownFaultError

DEFAULTS = {
    "plugin_registry_dir": "/var/lib/kubelet/plugins_registry",
    "plugins_dir": "/var/lib/kubelet/plugins",
    "cdi_dir": "/var/run/cdi",
    "state_dir": "/var/lib/dra-reference-driver",
}


class ConfigError(ValueError):
    """Bad flag or environment value; the message names it and the accepted form."""


@dataclass(frozen=True)
class Config:
    """Everything the plugin needs to start."""

    node_name: str
    kubeconfig: Path | None
    plugin_registry_dir: Path
    plugins_dir: Path
    cdi_dir: Path
    state_dir: Path
    device_config: Path | None
    faults: Faults
    driver_name: str = DRIVER_NAME
    resync_seconds: float = 60.0
    log_level: str = "INFO"
    device_status: bool = False
    binding_conditions: bool = False
    checkpoint_format: int = 2  # the checkpoint format written (1: as before format 2, for upgrade tests)
    binding_failure_devices: frozenset[str] = frozenset()
    no_cdi: bool = False  # --no-cdi: write no CDI spec, name no CDI device (a driver without CDI)
    rolling_update_uid: str = ""  # --rolling-update-uid: this instance's pod UID, so two instances register at once
    ready_file: Path | None = None  # --ready-file: written once the kubelet registered the plugin (readiness probe)

    @property
    def checkpoint_path(self) -> Path:
        """``<state_dir>/checkpoint.json``."""
        return self.state_dir / "checkpoint.json"


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="dra-reference-driver", description=f"Reference GPU DRA kubelet plugin (driver {DRIVER_NAME})."
    )
    p.add_argument("--node-name", help="this node (env NODE_NAME)")
    p.add_argument("--kubeconfig", type=Path, help="kubeconfig file; default: in-cluster service account")
    for key, default in DEFAULTS.items():
        p.add_argument("--" + key.replace("_", "-"), type=Path, default=Path(default), help=f"default {default}")
    p.add_argument("--config", dest="device_config", type=Path, help="device YAML (default: 8 simulated GPUs)")
    p.add_argument(
        "--faults",
        default="",
        help=f"comma-separated faults to inject (also env DRA_REFERENCE_FAULTS); known: {', '.join(sorted(FAULTS))}",
    )
    p.add_argument("--driver-name", default=DRIVER_NAME, help=f"default {DRIVER_NAME}")
    p.add_argument("--resync-seconds", type=float, default=60.0, help="ResourceSlice re-check period")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument(
        "--device-status",
        action="store_true",
        help="write ResourceClaim status.devices for prepared devices (KEP-4817; needs resourceclaims/status update)",
    )
    p.add_argument(
        "--binding-conditions",
        action="store_true",
        help="publish devices with bindingConditions and set them True for allocated devices (KEP-5007)",
    )
    p.add_argument(
        "--checkpoint-format",
        default="v2",
        choices=["v1", "v2"],
        help="checkpoint format written (reads both): v2 (default) or v1, the layout before format 2",
    )
    p.add_argument(
        "--binding-failure-devices",
        default="",
        metavar="NAMES",
        help="with --binding-conditions: comma-separated device names whose attach fails; the driver sets their "
        "bindingFailureConditions True instead (KEP-5007), e.g. gpu-3",
    )
    p.add_argument(
        "--no-cdi",
        action="store_true",
        help="a driver without CDI: write no CDI spec and name no CDI device in NodePrepareResources (its profile "
        "declares cdi: false; fault cdi-undeclared ignores this flag)",
    )
    p.add_argument(
        "--rolling-update-uid",
        default="",
        metavar="UID",
        help="this instance's pod UID (env POD_UID): sockets <driver>-<UID>-reg.sock and dra-<UID>.sock, so a new "
        "instance registers beside the old one during a DaemonSet rolling update with maxSurge (KEP-4381; "
        "kubeletplugin RollingUpdate option)",
    )
    p.add_argument(
        "--ready-file",
        type=Path,
        help="a file written once the kubelet has registered the plugin (NotifyRegistrationStatus), for a "
        "readiness probe: a rolling update with maxSurge then deletes the old instance only after the new one "
        "registered",
    )
    return p


def from_args(argv: list[str] | None = None, env: dict[str, str] | None = None) -> Config:
    """Parse ``argv`` (and ``env``, default os.environ). Raises ConfigError naming the bad input."""
    env = os.environ if env is None else env
    args = parser().parse_args(argv)
    args.node_name = args.node_name or env.get("NODE_NAME")
    if not args.node_name:
        raise ConfigError("--node-name is required (or set NODE_NAME)")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise ConfigError(f"--kubeconfig {args.kubeconfig}: no such file")
    if args.device_config is not None and not args.device_config.is_file():
        raise ConfigError(f"--config {args.device_config}: no such file")
    if args.resync_seconds <= 0:
        raise ConfigError(f"--resync-seconds {args.resync_seconds}: must be positive")
    failing = frozenset(n.strip() for n in args.binding_failure_devices.split(",") if n.strip())
    if failing and not args.binding_conditions:
        raise ConfigError(
            f"--binding-failure-devices {args.binding_failure_devices}: needs --binding-conditions (only devices "
            "published with bindingConditions can fail to attach)"
        )
    try:
        faults = Faults.parse(args.faults, env.get("DRA_REFERENCE_FAULTS"))
    except UnknownFaultError as err:
        raise ConfigError(str(err)) from None
    return Config(
        node_name=args.node_name,
        kubeconfig=args.kubeconfig,
        plugin_registry_dir=args.plugin_registry_dir,
        plugins_dir=args.plugins_dir,
        cdi_dir=args.cdi_dir,
        state_dir=args.state_dir,
        device_config=args.device_config,
        faults=faults,
        driver_name=args.driver_name,
        resync_seconds=args.resync_seconds,
        log_level=args.log_level,
        device_status=args.device_status,
        binding_conditions=args.binding_conditions,
        checkpoint_format=int(args.checkpoint_format[1:]),
        binding_failure_devices=failing,
        no_cdi=args.no_cdi,
        rolling_update_uid=args.rolling_update_uid or env.get("POD_UID", ""),
        ready_file=args.ready_file,
    )
