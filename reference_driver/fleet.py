"""Fleet mode: one process publishing the ResourceSlices of many nodes that run no kubelet plugin (kwok fake
nodes of the scheduling benchmark). ``python -m reference_driver.fleet --kubeconfig K --node-selector
type=kwok --devices 8``.

Every node matching the label selector gets the pool the plugin would publish on it (pool per node, pool name
= node name, Node controller ownerReference; :mod:`reference_driver.slices` plans and renders them from the
simulated inventory of ``--devices`` GPUs). New nodes are published within ``--poll-seconds``; every
``--resync-seconds`` each node's pool is re-checked with :meth:`SlicePublisher.sync` (re-creates deleted
slices). On SIGTERM/SIGINT the fleet deletes the slices it published and exits 0 (2 on bad flags).
There is no gRPC server: nothing calls NodePrepareResources on a fake node.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import DRIVER_NAME, slices
from .inventory import SimulatedInventory, SimulatedSpec

log = logging.getLogger("reference_driver.fleet")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Flags; exits 2 (argparse) naming a bad one."""
    p = argparse.ArgumentParser(prog="dra-reference-driver-fleet", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", type=Path, required=True, help="kubeconfig file")
    p.add_argument("--node-selector", default="type=kwok", help="label selector of the nodes (default type=kwok)")
    p.add_argument("--devices", type=int, default=8, help="simulated GPUs per node (1..1024, default 8)")
    p.add_argument("--driver-name", default=DRIVER_NAME, help=f"default {DRIVER_NAME}")
    p.add_argument("--poll-seconds", type=float, default=1.0, help="how often new nodes are looked for")
    p.add_argument("--resync-seconds", type=float, default=300.0, help="full re-check period of every pool")
    p.add_argument("--workers", type=int, default=8, help="parallel API writers (default 8)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = p.parse_args(argv)
    if not 1 <= args.devices <= 1024:
        p.error(f"--devices {args.devices}: expected an integer 1..1024")
    if args.poll_seconds <= 0 or args.resync_seconds <= 0 or args.workers < 1:
        p.error("--poll-seconds and --resync-seconds must be positive, --workers at least 1")
    if not args.kubeconfig.is_file():
        p.error(f"--kubeconfig {args.kubeconfig}: no such file")
    return args


def node_slices(node: str, uid: str, driver: str, devices: int) -> list[dict]:
    """The ResourceSlices (generation 1) of ``node``'s pool of ``devices`` simulated GPUs."""
    snapshot = SimulatedInventory(SimulatedSpec(count=devices), node).snapshot()
    return slices.render(slices.plan(snapshot, node, driver), node, uid, driver, generation=1)


class Fleet:
    """Publishes and keeps the pools of every node matching ``selector``; ``published`` maps node -> slice
    names it wrote."""

    def __init__(self, api, selector: str, driver: str, devices: int, workers: int = 8) -> None:
        from kubernetes import client  # noqa: PLC0415 - the pure helpers above need no kubernetes

        self._api, self._core, self._res = api, client.CoreV1Api(api), client.ResourceV1Api(api)
        self.selector, self.driver, self.devices = selector, driver, devices
        self.published: dict[str, list[str]] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fleet")
        self.stop_event = threading.Event()

    def nodes(self) -> dict[str, str]:
        """Matching nodes: name -> uid."""
        resp = self._core.list_node(label_selector=self.selector, _preload_content=False, _request_timeout=30)
        return {n["metadata"]["name"]: n["metadata"]["uid"] for n in json.loads(resp.data).get("items") or []}

    def _existing(self) -> dict[str, list[str]]:
        resp = self._res.list_resource_slice(
            field_selector=f"spec.driver={self.driver}", _preload_content=False, _request_timeout=30
        )
        out: dict[str, list[str]] = {}
        for item in json.loads(resp.data).get("items") or []:
            out.setdefault(item["spec"].get("nodeName", ""), []).append(item["metadata"]["name"])
        return out

    def _create(self, node: str, uid: str) -> None:
        from kubernetes.client.rest import ApiException  # noqa: PLC0415

        names = []
        for obj in node_slices(node, uid, self.driver, self.devices):
            try:
                self._res.create_resource_slice(obj, _request_timeout=30)
            except ApiException as err:
                if err.status != 409:
                    raise
            names.append(obj["metadata"]["name"])
        self.published[node] = names

    def publish_new(self) -> int:
        """Create the pools of matching nodes that have none; returns how many nodes were published."""
        nodes, have = self.nodes(), self._existing()
        todo = [(n, uid) for n, uid in sorted(nodes.items()) if n not in have]
        for n in nodes:
            if n in have:
                self.published.setdefault(n, have[n])
        list(self._pool.map(lambda item: self._create(*item), todo))
        if todo:
            log.info("published %d new pool(s); %d node(s) in the fleet", len(todo), len(self.published))
        return len(todo)

    def resync(self) -> None:
        """Re-check every published pool with the plugin's own sync (re-creates deleted slices)."""
        from .publisher import SlicePublisher  # noqa: PLC0415

        inventories = {n: SimulatedInventory(SimulatedSpec(count=self.devices), n) for n in self.nodes()}
        pubs = [SlicePublisher(self._api, n, self.driver, inv.snapshot) for n, inv in inventories.items()]
        list(self._pool.map(lambda p: p.sync_with_retry(), pubs))

    def run(self, poll: float, resync: float) -> None:
        """Publish until :attr:`stop_event` is set; API errors are logged and retried on the next poll."""
        waited = 0.0
        while not self.stop_event.is_set():
            try:
                self.publish_new()
                if waited >= resync:
                    self.resync()
                    waited = 0.0
            except Exception as err:  # noqa: BLE001 - keep the fleet alive, retry on the next poll
                log.warning("fleet publish failed: %s", err)
            self.stop_event.wait(poll)
            waited += poll

    def remove(self) -> int:
        """Delete every slice this fleet published; returns how many were deleted."""
        from kubernetes.client.rest import ApiException  # noqa: PLC0415

        names = [name for names in self.published.values() for name in names]

        def delete(name: str) -> int:
            try:
                self._res.delete_resource_slice(name, _request_timeout=30)
                return 1
            except ApiException as err:
                if err.status != 404:
                    log.warning("deleting slice %s failed: %s %s", name, err.status, err.reason)
                return 0

        done = sum(self._pool.map(delete, names))
        self._pool.shutdown(wait=True)
        log.info("removed %d slice(s) of %d node(s)", done, len(self.published))
        return done


def main(argv: list[str] | None = None) -> int:
    """Run the fleet until SIGTERM/SIGINT, then delete its slices."""
    args = parse(argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from .kube import api_client  # noqa: PLC0415

    fleet = Fleet(api_client(args.kubeconfig), args.node_selector, args.driver_name, args.devices, args.workers)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: fleet.stop_event.set())
    log.info("fleet of driver %s: nodes %r, %d device(s) each", args.driver_name, args.node_selector, args.devices)
    fleet.run(args.poll_seconds, args.resync_seconds)
    fleet.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
