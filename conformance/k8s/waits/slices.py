"""ResourceSlice waits. Source: KEP-4381 (a driver publishes ≥ 1 slice per served node, PUB-08); complete
pools: ``resourceSliceCount`` slices of the highest generation (resource.k8s.io/v1 ResourcePool)."""
from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

from conformance.core import errors, timeouts

from ..client import K8s
from ..objects import Obj


def complete_pools(slices: list[Obj]) -> dict[str, list[Obj]]:
    """``{pool name: slices of its highest generation}`` for pools whose slice count is complete."""
    by_pool: dict[str, list[Obj]] = {}
    for s in slices:
        by_pool.setdefault(s.get("spec.pool.name"), []).append(s)
    out = {}
    for pool, items in by_pool.items():
        gen = max(int(s.get("spec.pool.generation") or 0) for s in items)
        current = [s for s in items if int(s.get("spec.pool.generation") or 0) == gen]
        if len(current) >= int(current[0].get("spec.pool.resourceSliceCount") or 1):
            out[pool] = current
    return out


def device_count(slices: Iterable[Obj]) -> int:
    """Number of devices across ``slices``."""
    return sum(len(s.get("spec.devices") or []) for s in slices)


def slices_published(k8s: K8s, driver: str, *, nodes: Iterable[str] = (), min_devices: int = 1,
                     timeout: float, failed: Callable[[], Optional[str]] | None = None) -> list[Obj]:
    """Wait until ``driver`` has complete pools with ≥ ``min_devices`` devices on every node in ``nodes``
    (any node when empty); return the driver's current slices. Polls every 2 s (field selector
    ``spec.driver``). Raises WaitTimeout listing what was seen per node; WaitFailed as soon as ``failed()``
    returns a message (e.g. the plugin process exited)."""
    wanted = list(nodes)
    budget = timeouts.scaled(timeout)
    deadline = time.monotonic() + budget
    seen: dict[str, int] = {}
    while True:
        try:
            slices = k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}")
        except errors.TransientApiError:
            slices = []
        pools = complete_pools(slices)
        current = [s for items in pools.values() for s in items]
        seen = {}
        for s in current:
            node = s.get("spec.nodeName") or ("<all nodes>" if s.get("spec.allNodes") else "<node selector>")
            seen[node] = seen.get(node, 0) + len(s.get("spec.devices") or [])
        if wanted:
            ok = all(seen.get(n, 0) >= min_devices for n in wanted)
        else:
            ok = bool(current) and sum(seen.values()) >= min_devices
        if ok:
            return current
        why = failed() if failed else None
        if why:
            state = "\n".join(f"  node {n}: {c} device(s)" for n, c in sorted(seen.items()))
            raise errors.WaitFailed(f"ResourceSlices of driver {driver}", budget, state, failed=why)
        if time.monotonic() >= deadline:
            state = "\n".join(f"  node {n}: {c} device(s)" for n, c in sorted(seen.items())) or \
                f"  no ResourceSlice with spec.driver={driver}"
            target = f"nodes {wanted}" if wanted else "any node"
            raise errors.WaitTimeout(f"ResourceSlices of driver {driver} with ≥ {min_devices} device(s) on {target}",
                                     budget, state)
        time.sleep(2)
