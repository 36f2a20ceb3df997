"""Unit tests of conformance.dra.checks.allocations: a healthy snapshot (claims allocated at once, the driver's
slices, its DeviceClass) has no violation; each hand-built bad snapshot breaks exactly the rule it targets."""

import copy

import pytest

from conformance.core.objects import Obj
from conformance.dra.checks.allocations import check_allocations

DRIVER = "gpu.example.com"
OPAQUE_CLASS = {"driver": DRIVER, "parameters": {"from": "class"}}
OPAQUE_CLAIM = {"driver": DRIVER, "parameters": {"from": "claim"}}


def _dev(name, model, index, **extra):
    return {"name": name, "attributes": {"model": {"string": model}, "index": {"int": index}}, **extra}


def _slice(node, devices, *, count=1, shared=None):
    spec = {"driver": DRIVER, "nodeName": node, "devices": devices}
    spec["pool"] = {"name": node, "generation": 1, "resourceSliceCount": count}
    if shared:
        spec["sharedCounters"] = shared
    owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": f"uid-{node}", "controller": True}
    return Obj(
        {"kind": "ResourceSlice", "metadata": {"name": f"{node}-slice", "ownerReferences": [owner]}, "spec": spec}
    )


def _consumes(amount):
    return {"consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": amount}}}]}


SLICES = [
    _slice("node-1", [_dev("gpu-0", "a", 0), _dev("gpu-1", "a", 1), _dev("gpu-2", "b", 2), _dev("gpu-3", "b", 3)]),
    _slice(
        "node-2",
        [_dev(f"part-{i}", "p", i, **_consumes("4Gi")) for i in range(3)]
        + [_dev("shared", "s", 9, allowMultipleAllocations=True)],
        shared=[{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}],
    ),
]
CLASSES = {
    "gpu": Obj(
        {
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                "config": [{"opaque": OPAQUE_CLASS}],
            },
        }
    )
}


def _result(request, device, pool="node-1", **extra):
    return {"request": request, "driver": DRIVER, "pool": pool, "device": device, **extra}


def _claim(name, requests, results, *, node="node-1", constraints=(), config=(), status_config=()):
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    devices = {"requests": requests, "constraints": list(constraints), "config": list(config)}
    allocation = {"devices": {"results": results, "config": list(status_config)}, "nodeSelector": selector}
    return Obj(
        {
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"devices": devices},
            "status": {"allocation": allocation},
        }
    )


def _exact(name, count=1, mode="ExactCount", device_class="gpu"):
    return {"name": name, "exactly": {"deviceClassName": device_class, "allocationMode": mode, "count": count}}


def _first_available(name):
    subs = [
        {"name": "small", "deviceClassName": "gpu", "count": 1},
        {"name": "big", "deviceClassName": "gpu", "count": 2},
    ]
    return {"name": name, "firstAvailable": subs}


def healthy() -> list[Obj]:
    """Three claims allocated at once: a pair with matchAttribute and both config sources, a prioritized-list
    claim (subrequest ``small`` chosen), and two counter-consuming partitions within their counter set."""
    pair = _claim(
        "pair",
        [_exact("gpu", 2)],
        [_result("gpu", "gpu-0"), _result("gpu", "gpu-1")],
        constraints=[{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/model"}],
        config=[{"requests": ["gpu"], "opaque": OPAQUE_CLAIM}],
        status_config=[
            {"source": "FromClass", "requests": ["gpu"], "opaque": OPAQUE_CLASS},
            {"source": "FromClaim", "requests": ["gpu"], "opaque": OPAQUE_CLAIM},
        ],
    )
    pick = _claim(
        "pick",
        [_first_available("pick")],
        [_result("pick/small", "gpu-2")],
        status_config=[{"source": "FromClass", "requests": ["pick/small"], "opaque": OPAQUE_CLASS}],
    )
    parts = _claim(
        "parts",
        [_exact("mem", 2)],
        [_result("mem", "part-0", "node-2"), _result("mem", "part-1", "node-2")],
        node="node-2",
        constraints=[{"distinctAttribute": f"{DRIVER}/index"}],
    )
    return [pair, pick, parts]


def _edit(claims: list[Obj], name: str, path: str, value) -> list[Obj]:
    """A deep copy of ``claims`` with ``path`` (dotted, list indexes as digits) of claim ``name`` set."""
    out = []
    for c in claims:
        raw = copy.deepcopy(c.raw)
        if c.name == name:
            *head, last = path.split(".")
            node = raw
            for part in head:
                node = node[int(part)] if part.isdigit() else node[part]
            node[int(last) if last.isdigit() else last] = value
        out.append(Obj(raw))
    return out


def _rules(claims, slices=SLICES, classes=CLASSES) -> list[str]:
    return sorted({v.rule for v in check_allocations(claims, slices, DRIVER, classes)})


def test_healthy_snapshot_has_no_violation():
    assert check_allocations(healthy(), SLICES, DRIVER, CLASSES) == []


def test_admin_access_and_multi_allocatable_devices_may_be_shared():
    admin = _claim("admin", [_exact("gpu")], [_result("gpu", "gpu-0", adminAccess=True)])
    shared = [_claim(f"s{i}", [_exact("gpu")], [_result("gpu", "shared", "node-2")], node="node-2") for i in (1, 2)]
    assert check_allocations(healthy() + [admin] + shared, SLICES, DRIVER, CLASSES) == []


def test_all_mode_gets_every_device_of_the_node():
    claim = _claim("all", [_exact("gpu", mode="All")], [_result("gpu", f"gpu-{i}") for i in range(4)])
    assert check_allocations([claim], SLICES, DRIVER, CLASSES) == []
    short = _edit([claim], "all", "status.allocation.devices.results", [_result("gpu", "gpu-0")])
    assert _rules(short) == ["allocation.count"]


def test_claims_without_a_result_of_the_driver_are_not_judged():
    empty = _claim("empty", [_exact("gpu")], [])
    fictional = _claim(
        "fake", [_exact("x", device_class="x")], [{"request": "x", "driver": "x.test", "pool": "p", "device": "d"}]
    )
    assert check_allocations([empty, fictional], SLICES, DRIVER, CLASSES) == []


BAD = [
    ("allocation.unique-device", "pick", "status.allocation.devices.results.0.device", "gpu-0"),
    ("allocation.device-published", "pick", "status.allocation.devices.results.0.device", "gpu-9"),
    ("allocation.device-class", "pick", "status.allocation.devices.results.0.driver", "other.example.com"),
    (
        "allocation.result-request",
        "pick",
        "status.allocation.devices.results",
        [_result("pick/small", "gpu-2"), _result("pick/huge", "gpu-3")],
    ),
    ("allocation.count", "pair", "spec.devices.requests.0.exactly.count", 3),
    ("allocation.match-attribute", "pair", "status.allocation.devices.results.1.device", "gpu-3"),
    ("allocation.distinct-attribute", "parts", "spec.devices.constraints.0.distinctAttribute", f"{DRIVER}/model"),
    ("allocation.config-requests", "pair", "status.allocation.devices.config.0.requests", ["ghost"]),
    ("allocation.config-requests", "pick", "status.allocation.devices.config.0.requests", ["pick/big"]),
    ("allocation.config-source", "pair", "status.allocation.devices.config.1.opaque", OPAQUE_CLASS),
    ("allocation.config-source", "pair", "status.allocation.devices.config.0.opaque", OPAQUE_CLAIM),
]


@pytest.mark.parametrize(("rule", "claim", "path", "value"), BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_each_bad_allocation_breaks_its_rule(rule, claim, path, value):
    found = check_allocations(_edit(healthy(), claim, path, value), SLICES, DRIVER, CLASSES)
    assert {v.rule for v in found} == {rule}, found
    assert all(v.source and v.obj and v.message for v in found), found


def test_shared_counters_over_capacity():
    over = _edit(
        healthy(),
        "parts",
        "status.allocation.devices.results",
        [_result("mem", f"part-{i}", "node-2") for i in range(3)],
    )
    over = _edit(over, "parts", "spec.devices.requests.0.exactly.count", 3)
    found = check_allocations(over, SLICES, DRIVER, CLASSES)
    assert [v.rule for v in found] == ["allocation.shared-counters"], found
    assert "part-2" in found[0].message and "mem" in found[0].message


def test_incomplete_pool_devices_are_unpublished():
    """A pool whose resourceSliceCount exceeds its slices (e.g. fault wrong-slice-count) publishes nothing."""
    slices = [_slice("node-1", SLICES[0].get("spec.devices"), count=2), SLICES[1]]
    assert "allocation.device-published" in _rules(healthy(), slices)


def test_first_available_with_two_subrequests_or_the_bare_parent():
    two = _edit(
        healthy(),
        "pick",
        "status.allocation.devices.results",
        [_result("pick/small", "gpu-2"), _result("pick/big", "gpu-3")],
    )
    assert _rules(two) == ["allocation.result-request"]
    bare = _edit(healthy(), "pick", "status.allocation.devices.results.0.request", "pick")
    assert "allocation.result-request" in _rules(bare)


def test_claim_config_dropped_from_the_allocation():
    dropped = _edit(
        healthy(),
        "pair",
        "status.allocation.devices.config",
        [{"source": "FromClass", "requests": ["gpu"], "opaque": OPAQUE_CLASS}],
    )
    assert _rules(dropped) == ["allocation.config-source"]


def test_claim_config_naming_every_request_may_be_written_with_requests_cleared():
    """Since 1.37 the allocator writes a claim config that names every request (or each chosen subrequest's
    parent) with ``requests`` cleared, "empty means all" (dynamic-resource-allocation v0.37 allocator): not a
    violation. A cleared entry for a config that names only some requests still is."""
    pick = _claim(
        "pick",
        [_first_available("pick")],
        [_result("pick/small", "gpu-2")],
        config=[{"requests": ["pick"], "opaque": OPAQUE_CLAIM}],
        status_config=[{"source": "FromClaim", "opaque": OPAQUE_CLAIM}],
    )
    assert _rules([pick]) == []
    two = _claim(
        "two",
        [_exact("a"), _exact("b")],
        [_result("a", "gpu-0"), _result("b", "gpu-1")],
        config=[{"requests": ["a"], "opaque": OPAQUE_CLAIM}],
        status_config=[{"source": "FromClaim", "opaque": OPAQUE_CLAIM}],
    )
    assert _rules([two]) == ["allocation.config-source"]
