"""Every device of a node, each prepared on its own: the driver prepares the device a claim was allocated, whichever
it is, not only the devices an idle node hands out first.

Most tests take one device and let the allocator choose it, so in a serial run they nearly always get the node's
first free device, and with device shards (``--workers``) each worker gets other ones: a driver that prepares only
some of its devices right would pass or fail depending on where its tests ran (breaker finding 3). This test pins a
claim to each device of one node, so every device is prepared, and seen, in every run.

Sources: driver contract, the prepared devices are the allocation results (KEP-4381; upstream test-driver
kubeletplugin.go prepares ``claim.status.allocation.devices.results``); resource.k8s.io/v1 DeviceRequest
``exactly.selectors`` (CEL, dra-protocols.md §6).
"""

import pytest

from conformance.api import timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]

# at most this many devices of the node are pinned, spread over its devices in name order (first and last
# included): a node with hundreds of devices (NICs) would otherwise start hundreds of pods
MAX_DEVICES = 16


def _spread(devices: list, limit: int = MAX_DEVICES) -> list:
    """``devices`` (sorted by name) when there are at most ``limit``, else ``limit`` of them evenly spread."""
    devices = sorted(devices, key=lambda d: d.name)
    if len(devices) <= limit:
        return devices
    return [devices[round(i * (len(devices) - 1) / (limit - 1))] for i in range(limit)]


@pytest.mark.scenario("PREP-11")
def test_each_device_of_a_node_is_prepared_as_itself(k8s, tracker, builder, inventory, probe, together):
    """On one driver node, a claim pinned to each untainted device that can be allocated beside the others (a
    CEL selector matching that device only; at most ``MAX_DEVICES``) and one pod per claim: each claim holds its
    pinned device and each pod's probe shows exactly that device.
    Source: driver contract (prepared devices are the allocation results); breaker finding 3."""
    # given: one node, and a claim pinned to each of its devices
    node = inventory.nodes()[0]
    devices = _spread([d for d in together.by_node.get(node, []) if not d.taints])
    assert devices, f"no untainted device of {inventory.driver} on node {node}: {inventory.names_on(node)}"
    try:
        selectors = [inventory.selector_for(d, on_node=True) for d in devices]
    except LookupError as exc:
        pytest.skip(f"a device cannot be pinned alone: {exc}; published (first devices): {inventory.sample()}")
    claims = [tracker.create(builder.claim(selectors=s)) for s in selectors]
    # when: one pod per claim runs on that node
    pods = [tracker.create(builder.pod(uses=c, node_name=node)) for c in claims]
    pods = [waits.pod_running(k8s, p, timeout=timeouts.POD_START) for p in pods]
    # then: each claim holds its device and each pod sees exactly that one
    wrong = []
    for device, claim, pod in zip(devices, claims, pods, strict=True):
        allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION, reserved_for=[pod])
        assert [r.device for r in allocated.results] == [device.name], allocated.describe()
        shown, evidence = probe.shows_devices(pod, [device.name], inventory.names_on(node))
        wrong += [] if shown else [f"{device.name}: {evidence}"]
    assert not wrong, f"{len(wrong)} of {len(devices)} devices of {node} prepared wrong: " + " | ".join(wrong)
