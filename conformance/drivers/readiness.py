"""Driver readiness shared by all deployers: DeviceClasses exist, ResourceSlices published.

Source: KEP-5970 expected failures ("no slices for the driver -> clear error", "wrong DeviceClass -> clear
error"); KEP-4381 (a driver publishes ≥ 1 slice per served node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from conformance.core import errors, names, timeouts
from conformance.core.profile import DriverProfile
from conformance.k8s import waits
from conformance.k8s.client import K8s

DRIVER_OWNER_LABEL = f"{names.LABEL_PREFIX}/owner"


def device_class_object(name: str, driver: str, run_id: str) -> dict:
    """A DeviceClass selecting every device of ``driver`` (what drivers' own charts ship), run-labelled."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {**names.run_labels(run_id), DRIVER_OWNER_LABEL: "driver"}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def ensure_device_classes(k8s: K8s, profile: DriverProfile, run_id: str) -> list[str]:
    """Create the profile's DeviceClasses that do not exist yet; return the names created by us."""
    created = []
    for name in profile.device_classes:
        if k8s.exists("DeviceClass", name):
            continue
        k8s.create(device_class_object(name, profile.driver, run_id))
        created.append(name)
    return created


def delete_device_classes(k8s: K8s, names_: Iterable[str]) -> None:
    """Delete DeviceClasses we created (NotFound ignored)."""
    for name in names_:
        try:
            k8s.unguarded().delete("DeviceClass", name)
        except errors.NotFound:
            pass


def check_device_classes(k8s: K8s, profile: DriverProfile) -> None:
    """Raise DriverNotReady naming the first DeviceClass of the profile that does not exist."""
    for name in profile.device_classes:
        if not k8s.exists("DeviceClass", name):
            raise errors.DriverNotReady(
                profile.driver,
                f"DeviceClass {name!r} (profile {profile.source or profile.name}, field device_classes) does not exist",
                "install the driver's DeviceClass or correct device_classes in the profile",
            )


def await_slices(
    k8s: K8s,
    profile: DriverProfile,
    nodes: Iterable[str] = (),
    *,
    timeout: float = timeouts.SLICES_PUBLISHED,
    logs: Callable[[], dict[str, str]] | None = None,
    failed: Callable[[], str | None] | None = None,
) -> list:
    """Wait for the driver's ResourceSlices (≥ 1 device on each of ``nodes``, any node when empty).

    Raises DriverNotReady with what was awaited, the slices seen and the tail of the plugin logs (``logs()``);
    early when ``failed()`` returns a message (a plugin process exited).
    """
    nodes = list(nodes)
    try:
        return waits.slices_published(k8s, profile.driver, nodes=nodes, min_devices=1, timeout=timeout, failed=failed)
    except errors.WaitError as exc:  # a timeout, or failed() ended it early
        detail = exc.last_state or "  (no slices)"
        if exc.failed:
            detail = f"  {exc.failed}\n" + detail
        for source, text in (logs() if logs else {}).items():
            detail += f"\n--- last log lines of {source} ---\n" + "\n".join(text.splitlines()[-15:])
        target = f"nodes {nodes}" if nodes else "any node"
        when = "(gave up: a plugin process exited)" if exc.failed else f"within {exc.timeout:.0f}s"
        raise errors.DriverNotReady(
            profile.driver, f"ResourceSlices with at least one device on {target} {when}", "seen:\n" + detail
        ) from None


def delete_slices(k8s: K8s, driver: str) -> list[str]:
    """Delete every ResourceSlice of ``driver`` (``spec.driver``; what a removed driver leaves when the kubelet
    does not wipe them); returns the names deleted. API errors end it quietly (tear-down continues)."""
    deleted = []
    try:
        for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}"):
            try:
                k8s.unguarded().delete("ResourceSlice", s.name)
                deleted.append(s.name)
            except errors.NotFound:
                pass
    except errors.ApiError:
        pass
    return deleted
