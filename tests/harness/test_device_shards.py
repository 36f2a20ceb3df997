"""Unit tests of device sharding in the parallel main job (issue 26 §1): the shard plan from discovered devices,
the shard selector on built claims, the shared device lock of sharded tests, the guard against claims outside
a shard, the timings overlap check with shards, and the xdist groups really keeping a group on one worker."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest

from conformance.dra import shards
from conformance.k8s.builders import parts
from conformance.k8s.builders.builder import Builder, BuilderContext
from conformance.runner import parallel, timings

DRIVER = "gpu.example.com"


TYPES = {"index": "int", "uuid": "string"}


def _devices(nodes=2, per_node=4, **extra) -> list[dict]:
    return [
        {
            "node": f"n{n}",
            "pool": f"n{n}",
            "device": f"gpu-{i}",
            "attributes": {"index": i, "uuid": f"u-{n}-{i}"},
            "attribute_types": TYPES,
        }
        | extra
        for n in range(nodes)
        for i in range(per_node)
    ]


def _members(plan: shards.ShardPlan, device: dict) -> list[int]:
    value = device["attributes"][plan.attribute.rsplit("/", 1)[1]]
    return [i for i in range(plan.shards) if value in plan.by_shard[i]]


# -- the plan -----------------------------------------------------------------------------------------------
def test_every_device_of_every_node_is_in_exactly_one_shard():
    devices = _devices(per_node=8)
    plan = shards.plan(DRIVER, devices, 4)
    assert plan.attribute == f"{DRIVER}/index" and plan.size == 2  # an int attribute first
    assert all(len(_members(plan, d)) == 1 for d in devices)
    assert plan.selector_of([1]) == f'device.attributes["{DRIVER}"].index in [1, 5]'
    with pytest.raises(IndexError):
        plan.selector_of([4])


def test_string_values_shard_too_and_size_counts_each_node():
    devices = [{**d, "attributes": {"uuid": d["attributes"]["uuid"]}} for d in _devices()]
    plan = shards.plan(DRIVER, devices, 2)
    assert plan.attribute == f"{DRIVER}/uuid" and plan.size == 2
    assert all(len(_members(plan, d)) == 1 for d in devices)
    assert plan.selector_of([0]).startswith(f'device.attributes["{DRIVER}"].uuid in ["u-0-0", ')


def test_a_version_or_bool_attribute_is_never_the_shard_key_and_fewest_values_win():
    """Breaker finding 4: a per-device ``version`` attribute sorting first was picked (``semver in [strings]``
    has no CEL overload: every sharded claim unschedulable)."""
    fw = {"fw": "version", "busy": "bool", "uuid": "string", "slot": "int"}
    devices = [
        {**d, "attributes": {"fw": f"1.{i}.0", "busy": bool(i % 2), "uuid": d["attributes"]["uuid"]}}
        | {"attribute_types": {k: v for k, v in fw.items() if k != "slot"}}
        for i, d in enumerate(_devices())
    ]
    assert shards.plan(DRIVER, devices, 2).attribute == f"{DRIVER}/uuid"  # not fw, though "fw" < "uuid"
    only_fw = [{**d, "attributes": {"fw": d["attributes"]["fw"]}} for d in devices]
    assert shards.plan(DRIVER, only_fw, 2) is None
    untyped = [{k: v for k, v in d.items() if k != "attribute_types"} for d in _devices()]
    assert shards.plan(DRIVER, untyped, 2) is None  # types unknown: no sharding, never a guess
    # a string with fewer distinct values (4 over both nodes) beats an int with more (8): shorter CEL lists
    slotted = [
        {**d, "attributes": {"slot": n, "uuid": f"u-{n % 4}"}, "attribute_types": fw} for n, d in enumerate(_devices())
    ]
    assert shards.plan(DRIVER, slotted, 2).attribute == f"{DRIVER}/uuid"


def test_facts_carry_the_attribute_types():
    from conformance.core.objects import Obj  # noqa: PLC0415
    from conformance.dra.inventory import facts  # noqa: PLC0415

    attrs = {"index": {"int": 0}, "fw": {"version": "1.2.0"}, "busy": {"bool": False}, "uuid": {"string": "u"}}
    spec = {"nodeName": "n", "pool": {"name": "n"}, "devices": [{"name": "gpu-0", "attributes": attrs}]}
    (row,) = facts([Obj({"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": spec})])
    assert row["attribute_types"] == {"index": "int", "fw": "version", "busy": "bool", "uuid": "string"}
    assert row["attributes"]["fw"] == "1.2.0"


def test_tainted_devices_do_not_count_in_the_size():
    devices = _devices(per_node=4)
    devices[0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert shards.plan(DRIVER, devices, 2).size == 1


@pytest.mark.parametrize(
    "devices, workers",
    [
        (_devices(), 1),  # one worker: nothing runs beside it
        ([], 4),
        (_devices(consumes_counters=True), 2),  # a partition and its GPU are different devices
        ([{**d, "node": ""} for d in _devices()], 2),  # network-attached: no per-node share
        ([{**d, "attributes": {"model": "a"}} for d in _devices()], 2),  # nothing tells devices apart
    ],
    ids=["one-worker", "no-devices", "shared-counters", "no-node", "no-distinct-attribute"],
)
def test_no_plan_when_shards_could_not_keep_tests_apart(devices, workers):
    assert shards.plan(DRIVER, devices, workers) is None


# -- claims built in a shard ----------------------------------------------------------------------------------
def _builder(selector: str) -> Builder:
    return Builder(BuilderContext("ns", "run1", "t1", DRIVER, "gpu-class", shard_selector=selector))


def test_every_request_and_subrequest_gets_the_shard_selector_after_its_own():
    shard = f'device.attributes["{DRIVER}"].index in [1]'
    claim = _builder(shard).claim(
        requests=[
            parts.request("a", selectors="true"),
            parts.first_available("b", parts.subrequest("one"), parts.subrequest("two", count=2)),
        ]
    )
    a, b = claim.raw["spec"]["devices"]["requests"]
    assert [s["cel"]["expression"] for s in a["exactly"]["selectors"]] == ["true", shard]
    assert [[s["cel"]["expression"] for s in sub["selectors"]] for sub in b["firstAvailable"]] == [[shard], [shard]]
    assert "selectors" not in _builder("").claim().raw["spec"]["devices"]["requests"][0]["exactly"]


# -- locks and guard ------------------------------------------------------------------------------------------
def _locked(tmp_path, shard: str) -> parallel.RunLocks:
    locks = parallel.RunLocks(tmp_path)
    locks.begin(False, shard)
    return locks


def _free(tmp_path, mode) -> bool:
    """Whether the device lock could be taken in ``mode`` now (without blocking)."""
    fd = os.open(tmp_path / parallel.DEVICE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_sharded_tests_share_the_device_lock_and_an_unsharded_one_waits(tmp_path):
    first, second = _locked(tmp_path, "s0"), _locked(tmp_path, "s1")
    first.need_devices()
    second.need_devices()  # a shared flock: granted at once
    assert (first.kind, second.kind) == ("shard", "shard")
    assert not _free(tmp_path, fcntl.LOCK_EX)  # a test holding the device lock alone waits for them
    first.end()
    second.end()
    whole = _locked(tmp_path, "")
    whole.need_devices()
    assert whole.kind == "devices" and whole.shard == ""
    assert not _free(tmp_path, fcntl.LOCK_SH)  # and a sharded test waits for it
    whole.end()
    assert _free(tmp_path, fcntl.LOCK_EX)


def test_an_exclusive_test_is_never_sharded(tmp_path):
    locks = parallel.RunLocks(tmp_path)
    locks.begin(True, "s0")
    assert locks.shard == "" and locks.kind == "exclusive"
    locks.end()


def _in_thread(fn) -> threading.Event:
    done = threading.Event()
    threading.Thread(target=lambda: (fn(), done.set()), daemon=True).start()
    return done


def test_once_an_exclusive_test_waits_no_new_test_starts_before_it(tmp_path):
    running = _locked(tmp_path, "")  # a test running (run lock shared)
    exclusive, late = parallel.RunLocks(tmp_path), parallel.RunLocks(tmp_path)
    exclusive_in = _in_thread(lambda: exclusive.begin(True))
    assert not exclusive_in.wait(0.3)  # waits for the running test
    late_in = _in_thread(lambda: late.begin(False))
    assert not late_in.wait(0.3)  # the turnstile: a new test waits behind the exclusive one
    running.end()
    assert exclusive_in.wait(5) and not late_in.wait(0.3)
    exclusive.end()
    assert late_in.wait(5)
    late.end()


def test_consecutive_exclusive_tests_of_a_worker_keep_the_run_lock(tmp_path):
    worker, other = parallel.RunLocks(tmp_path), parallel.RunLocks(tmp_path)
    worker.begin(True)
    worker.end(keep=True)  # the next test of this worker is exclusive too
    other_in = _in_thread(lambda: other.begin(False))
    assert not other_in.wait(0.3)
    worker.begin(True)  # at once: the lock was kept
    assert worker.kind == "exclusive" and worker.queued_before_s == 0.0
    worker.end(keep=False)
    assert other_in.wait(5)
    other.end()
    shared = _locked(tmp_path, "")
    shared.end(keep=True)  # only an exclusive test keeps anything
    assert shared._run_fd is None


def _guarded(tmp_path, shard: str):
    config = SimpleNamespace(stash={})
    config.stash[parallel.LOCKS] = locks = _locked(tmp_path, shard)
    tracker = SimpleNamespace(before_create=[], after_release=[])
    parallel.guard(config, tracker)
    return locks, tracker.before_create[0]


def test_a_sharded_test_creating_a_claim_outside_its_shard_fails_naming_the_request(tmp_path):
    shard = f'device.attributes["{DRIVER}"].index in [0]'
    locks, before = _guarded(tmp_path, shard)
    before(_builder(shard).claim(count=2).raw)
    before(_builder(shard).claim_template(requests=[parts.first_available("x", parts.subrequest("one"))]).raw)
    before(_builder(shard).claim(version="v1beta1").raw)  # no "exactly" in v1beta1: still recognised
    with pytest.raises(parallel.ShardError, match=r"requests \['device'\] lack the test's device shard selector"):
        before(_builder("").claim().raw)
    with pytest.raises(parallel.ShardError, match=r"extended resources \['example.com/gpu'\]"):
        before({"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"example.com/gpu": "1"}}}]}})
    before({"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}})
    assert locks.kind == "shard" and locks.devices_at > 0
    locks.end()


def test_an_unsharded_test_may_create_any_claim(tmp_path):
    locks, before = _guarded(tmp_path, "")
    before(_builder("").claim().raw)
    before({"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"example.com/gpu": "1"}}}]}})
    assert locks.kind == "devices"
    locks.end()


def _item(*marks, exclusive=False):
    found = {"shard_devices": [SimpleNamespace(args=a, kwargs={}) for a in marks]}
    if exclusive:
        found["xdist_group"] = [SimpleNamespace(args=("dra-cluster-state",), kwargs={})]
    return SimpleNamespace(
        get_closest_marker=lambda name: (found.get(name) or [None])[0],
        iter_markers=lambda name: found.get(name, []),
    )


CRASH_CONFTEST = """
import os
from pathlib import Path
from conformance.runner import parallel

DEVICES = [{"node": "n0", "pool": "n0", "device": f"gpu-{i}", "attributes": {"index": i},
            "attribute_types": {"index": "int"}} for i in range(4)]

def pytest_configure(config):
    config.addinivalue_line("markers", "shard_devices(n): test")
    parallel.register(config, Path(os.environ["LOCKS"]), lambda: ("gpu.example.com", DEVICES))

def pytest_runtest_setup(item):
    if os.environ.get("PYTEST_XDIST_WORKER") not in ("gw0", "gw1"):
        Path(os.environ["REPLACED"]).touch()  # the replacement worker has been given tests and runs one
"""

CRASH_TESTS = """
import json, os, time, pytest
from conformance.runner.parallel import shard_selector

@pytest.mark.shard_devices()
@pytest.mark.parametrize("n", range(24))
def test_sharded(n, request):
    if n == 0:
        with open(os.environ["CRASHED"], "w") as f:
            f.write(json.dumps(shard_selector(request.node)))
        os._exit(1)  # the worker dies holding its slot: xdist starts a replacement with a new ID
    deadline = time.monotonic() + 90
    while not os.path.exists(os.environ["REPLACED"]) and time.monotonic() < deadline:
        time.sleep(0.02)  # gw1 holds its test until the replacement runs one: the crashed worker's tests stay
        # pending for the replacement (a gw1 finishing early would take them all: a race, seen under load)
    with open(os.environ["OUT"], "a") as f:
        f.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], shard_selector(request.node)]) + "\\n")
"""


def test_no_test_takes_the_slot_of_a_worker_that_crashed_in_it(tmp_path):
    """Its pods may still hold the slot's devices: the slot is poisoned (device_slots module docstring)."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CRASH_CONFTEST))
    (tmp_path / "test_crash.py").write_text(textwrap.dedent(CRASH_TESTS))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out, locks = tmp_path / "out.jsonl", tmp_path / "locks"
    env = {**os.environ, "OUT": str(out), "LOCKS": str(locks), "REPLACED": str(tmp_path / "replaced")}
    env["CRASHED"] = str(tmp_path / "crashed.json")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--max-worker-restart", "2"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    ran = [json.loads(line) for line in out.read_text().splitlines()]
    assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 failed, 23 passed" in done.stdout, done.stdout[-3000:]  # only the test that killed its worker
    crashed = json.loads((tmp_path / "crashed.json").read_text())
    one_slot = {f'device.attributes["{DRIVER}"].index in [{i}]' for i in range(4)}
    assert crashed in one_slot and {shard for _, shard in ran} <= one_slot - {crashed}, (crashed, ran)
    assert any(worker == "gw2" for worker, _ in ran), ran  # the replacement ran sharded tests, never in that slot


# -- timings --------------------------------------------------------------------------------------------------
def test_tests_of_different_shards_may_overlap_but_not_of_one_shard_or_beside_the_device_lock():
    rows = [
        {"id": "s0", "lock": "shard", "shard": "a", "start": 1.0, "stop": 10.0, "devices_at": 2.0},
        {"id": "s1", "lock": "shard", "shard": "b", "start": 1.0, "stop": 10.0, "devices_at": 2.0},
    ]
    assert timings.overlaps(rows) == []
    rows.append({"id": "s0-again", "lock": "shard", "shard": "a", "start": 5.0, "stop": 12.0, "devices_at": 6.0})
    rows.append({"id": "whole", "lock": "devices", "start": 9.0, "stop": 14.0, "devices_at": 9.5})
    assert timings.overlaps(rows) == [
        "s0 and s0-again (both started pods)",
        "s0 and whole (both started pods)",
        "s1 and whole (both started pods)",
        "s0-again and whole (both started pods)",
    ]


# -- xdist groups (pytest 9 + pytest-xdist 3.8) ---------------------------------------------------------------
CONFTEST = """
import os, pytest
from conformance.runner.parallel import GroupIds

def pytest_configure(config):
    if os.environ.get("FIX") and hasattr(config, "workerinput") and config.getvalue("loadgroup"):
        config.pluginmanager.register(GroupIds())

def pytest_collection_modifyitems(items):  # as the plugin does: the group mark added after collection
    for item in items:
        item.add_marker(pytest.mark.xdist_group("dra-cluster-state"))
"""

TESTS = """
import json, os, pytest

@pytest.mark.parametrize("n", range(6))
def test_one(n, request):
    with open(os.environ["OUT"], "a") as f:
        f.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], request.node.nodeid]) + "\\n")
"""


def _run_grouped(tmp_path, fix: bool) -> list[list[str]]:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent(TESTS))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / f"out-{fix}.jsonl"
    env = {**os.environ, "OUT": str(out), "FIX": "1" if fix else ""}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_group_added_at_collection_stays_on_one_worker_and_reports_keep_the_plain_node_id(tmp_path):
    ran = _run_grouped(tmp_path, fix=True)
    assert len(ran) == 6 and len({worker for worker, _ in ran}) == 1
    assert all("@" not in nodeid for _, nodeid in ran)


def test_without_group_ids_xdist_groups_nothing_under_pytest_9(tmp_path):
    """The bug GroupIds fixes (a control: if xdist fixes it, this test tells us to drop GroupIds)."""
    assert len({worker for worker, _ in _run_grouped(tmp_path, fix=False)}) == 2
