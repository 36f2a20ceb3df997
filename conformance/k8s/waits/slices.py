"""ResourceSlice waits. Source: KEP-4381 (a driver publishes ≥ 1 slice per served node, PUB-08); complete
pools: ``resourceSliceCount`` slices of the highest generation (resource.k8s.io/v1 ResourcePool)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from conformance.core import errors, timeouts
from conformance.core.objects import Obj
from conformance.dra.inventory import complete_pools, current_slices, driver_slices, pool_devices
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, poll

SLICES_POLL_S = 0.5  # seconds between slice lists
# pkg/kubelet/cm/dra defaultWipingDelay: the kubelet wipes a node's slices of a driver this long after its last
# plugin instance unregistered, whatever --timeout-scale says; a wait for the wipe is never shorter than it plus
# a margin (the fault matrix's 0.2 scale left 24 s, and a healthy uninstall failed)
KUBELET_WIPING_DELAY_S = 30.0
WIPE_MARGIN_S = 30.0


def device_count(slices: Iterable[Obj]) -> int:
    """Number of devices across ``slices``."""
    return sum(len(s.get("spec.devices") or []) for s in slices)


def devices_by_node(slices: Iterable[Obj]) -> dict[str, int]:
    """``{node: number of devices}`` of ``slices``; slices without ``nodeName`` count under ``<all nodes>``
    (allNodes) or ``<node selector>``."""
    out: dict[str, int] = {}
    for s in slices:
        node = s.get("spec.nodeName") or ("<all nodes>" if s.get("spec.allNodes") else "<node selector>")
        out[node] = out.get(node, 0) + len(s.get("spec.devices") or [])
    return out


@blames(errors.DRIVER)
def slices_published(
    k8s: K8s,
    driver: str,
    *,
    nodes: Iterable[str] = (),
    min_devices: int = 1,
    timeout: float,
    failed: Callable[[], str | None] | None = None,
) -> list[Obj]:
    """Wait until ``driver`` has complete pools with ≥ ``min_devices`` devices on every node in ``nodes``
    (any node when empty); return the driver's current slices. Polls every 0.5 s (field selector
    ``spec.driver``). Raises WaitTimeout listing what was seen per node; WaitFailed as soon as ``failed()``
    returns a message (e.g. the plugin process exited)."""
    wanted = list(nodes)
    seen: dict[str, int] = {}
    incomplete: list[str] = []
    current: list[Obj] = []

    def observed() -> str:
        lines = [f"  node {n}: {c} device(s)" for n, c in sorted(seen.items())]
        return "\n".join(lines + incomplete)

    def check() -> bool:
        try:
            slices = driver_slices(k8s, driver)
        except errors.TransientApiError:
            slices = []
        complete = complete_pools(slices)
        current[:] = [s for items in complete.values() for s in items]
        seen.clear()
        seen.update(devices_by_node(current))
        incomplete[:] = [
            f"  pool {pool}: incomplete, {len(items)} slice(s) of generation {items[0].get('spec.pool.generation')} "
            f"but resourceSliceCount {items[0].get('spec.pool.resourceSliceCount')} (ResourcePool.resourceSliceCount)"
            for pool, items in sorted(current_slices(slices).items())
            if pool not in complete
        ]
        if wanted and all(seen.get(n, 0) >= min_devices for n in wanted):
            return True
        if not wanted and current and sum(seen.values()) >= min_devices:
            return True
        why = failed() if failed else None
        if why:
            raise errors.WaitFailed(
                f"ResourceSlices of driver {driver}", timeouts.scaled(timeout), observed(), failed=why
            )
        return False

    if poll(check, timeout=timeout, interval=SLICES_POLL_S):
        return current
    state = observed() or f"  no ResourceSlice with spec.driver={driver}"
    target = f"nodes {wanted}" if wanted else "any node"
    raise errors.WaitTimeout(
        f"ResourceSlices of driver {driver} with ≥ {min_devices} device(s) on {target}", timeouts.scaled(timeout), state
    )


@blames(errors.DRIVER)
def pool_republished(
    k8s: K8s, driver: str, pool: str, *, devices: dict, removed: Iterable[str], timeout: float
) -> list[Obj]:
    """Wait until ``driver``'s pool ``pool`` is complete again with exactly ``devices`` (as
    :func:`~conformance.dra.inventory.pool_devices` reads them: names, attributes, capacities) and none of its
    current slices is one of the ``removed`` slice UIDs (so the answer is a republish, not the listing from before
    the delete); return the pool's current slices. Polls every 0.5 s. Raises WaitTimeout with the pool's last
    observed slices. Source: upstream "ResourceSlice must be removed on kubelet startup" (the driver republishes),
    e2e_dra upgradedowngrade "wait for ResourceSlices" (PUB-03, PUB-09)."""
    gone = set(removed)
    last: list[Obj] = []

    def check() -> bool:
        try:
            slices = [s for s in driver_slices(k8s, driver) if s.get("spec.pool.name") == pool]
        except errors.TransientApiError:
            return False
        last[:] = slices
        current = complete_pools(slices).get(pool)
        return bool(current) and not gone & {s.uid for s in current} and pool_devices(current) == devices

    if poll(check, timeout=timeout, interval=SLICES_POLL_S):
        return complete_pools(last)[pool]
    state = "\n".join(
        f"  {s.name} uid={s.uid} generation={s.get('spec.pool.generation')} "
        f"count={s.get('spec.pool.resourceSliceCount')} devices={sorted(pool_devices([s]))}"
        for s in last
    )
    raise errors.WaitTimeout(
        f"pool {pool} of driver {driver} republished with its {len(devices)} device(s) {sorted(devices)[:8]} "
        f"(without slice UIDs {sorted(gone)})",
        timeouts.scaled(timeout),
        state or f"  no ResourceSlice of pool {pool}",
    )


@blames(errors.DRIVER)
def slices_gone(k8s: K8s, driver: str, *, timeout: float) -> None:
    """Wait until no ResourceSlice of ``driver`` exists (after an uninstall: the kubelet wipes a node's slices
    of a driver 30 s after its last plugin instance unregistered, pkg/kubelet/cm/dra ``defaultWipingDelay``; a
    driver's own controller removes the others). ``timeout``: seconds, scaled by ``--timeout-scale`` but never
    below :data:`KUBELET_WIPING_DELAY_S` + :data:`WIPE_MARGIN_S` (the kubelet's delay is fixed). Polls every
    0.5 s. Raises WaitTimeout naming every slice left (name, node, pool)."""
    left: list[str] = []
    wait_s = max(timeouts.scaled(timeout), KUBELET_WIPING_DELAY_S + WIPE_MARGIN_S)

    def check() -> bool:
        try:
            slices = driver_slices(k8s, driver)
        except errors.TransientApiError:
            return False
        left[:] = [f"{s.name} (node {s.get('spec.nodeName') or '-'}, pool {s.get('spec.pool.name')})" for s in slices]
        return not slices

    if not poll(check, timeout=wait_s, interval=SLICES_POLL_S, scale=False):
        raise errors.WaitTimeout(f"no ResourceSlice of driver {driver}", wait_s, "\n".join(left))
