"""The reference driver's simulated GPUs 8 per node by default (issue 26 §1), each backed by a host
char device of its own, so a run gets 8 device slots (one per GPU: conformance/runner/device_slots.py) and PREP-12
still tells every device apart (breaker s13 B3)."""

from __future__ import annotations

import os
import stat

from conformance.dra.inventory import Device
from conformance.dra.shards import plan, slot_count
from conformance.drivers.profiles import load
from conformance.node import cdi_identity
from reference_driver import DRIVER_NAME
from reference_driver.cdi import node_edits
from reference_driver.inventory import SimulatedInventory
from reference_driver.inventory.simulated import DEFAULT_COUNT, HOST_NODES, parse_spec

# major:minor of each backing node, from the kernel's Documentation/admin-guide/devices.txt
DEVICES_TXT = {
    "/dev/null": (1, 3),
    "/dev/zero": (1, 5),
    "/dev/full": (1, 7),
    "/dev/urandom": (1, 9),
    "/dev/random": (1, 8),
    "/dev/tty": (5, 0),
    "/dev/ptmx": (5, 2),
    "/dev/fuse": (10, 229),
}


def _snapshot(node: str = "node-a", count: int = len(HOST_NODES)):
    return SimulatedInventory(parse_spec({"count": count}), node).snapshot()


def _as_published(device, node: str) -> Device:
    """The conformance inventory's view of a reference driver device (attributes by qualified name)."""
    attrs = {f"{DRIVER_NAME}/{k}": a.value for k, a in device.attributes.items() if "/" not in k}
    return Device(node, node, device.name, attrs, {})


def test_the_default_is_eight_gpus_each_backed_by_its_own_host_char_device():
    devices = _snapshot().devices
    assert DEFAULT_COUNT == 8 == len(SimulatedInventory(parse_spec(None), "n").snapshot().devices)
    assert [d.name for d in devices] == [f"gpu-{i}" for i in range(8)]
    assert [d.node_host for d in devices] == list(HOST_NODES) and len(set(HOST_NODES)) == 8
    assert [d.attribute("hostDeviceNode") for d in devices] == [h.removeprefix("/dev/") for h in HOST_NODES]


def test_the_backing_nodes_are_the_char_devices_devices_txt_names():
    """Every backing node exists on this host as the char device the kernel's device list assigns it (containerd
    stats the hostPath to create the node in the container; a missing one fails the pod's start)."""
    wrong = {}
    for path, want in DEVICES_TXT.items():
        info = os.stat(path)
        got = (os.major(info.st_rdev), os.minor(info.st_rdev)) if stat.S_ISCHR(info.st_mode) else None
        if got != want:
            wrong[path] = got
    assert set(DEVICES_TXT) == set(HOST_NODES) and not wrong, wrong


def test_prep12_tells_each_of_eight_devices_apart_with_the_reference_profile():
    """The reference profile's ``cdi_identity`` node patterns judge each of 8 devices' own CDI node right, and
    no two devices render alike (the B3 rule does not fire on 8 GPUs)."""
    pattern = {k: v for k, v in load("reference").cdi_identity.items() if k != "env"}
    snap = _snapshot()
    published = [_as_published(d, "node-a") for d in snap.devices]
    for device, seen in zip(snap.devices, published, strict=True):
        nodes = node_edits(device)
        found = {"device_nodes": {n["path"] for n in nodes}, "host_device_nodes": {n["hostPath"] for n in nodes}}
        assert cdi_identity.problems(pattern, DRIVER_NAME, seen, published, found) == [], device.name


def test_four_shards_get_two_devices_each_on_every_node_of_eight():
    """A plan of two 8-GPU nodes in 4 shards: 2 devices per shard and node, one apart on every node
    (conformance/dra/shards.py; a run uses shards.slot_count of them: 8)."""
    facts = [
        {
            "node": node,
            "attributes": {k: a.value for k, a in d.attributes.items()},
            "attribute_types": {k: a.kind for k, a in d.attributes.items()},
        }
        for node in ("node-0", "node-1")
        for d in _snapshot(node).devices
    ]
    shards = plan(DRIVER_NAME, facts, 4)
    assert shards is not None and shards.size == 2, shards
    assert slot_count(facts) == 8 and plan(DRIVER_NAME, facts, 8).usable == tuple(range(8))
