"""Unit tests of device slots (issue 26 §1): one shard per device of the smallest node, tests taking as many slots
as devices per node they need, disjoint holders, waiting without deadlock, poisoned slots of a dead holder, the
guard's order and slot choice, and the overlap check reading slots."""

from __future__ import annotations

import errno
import threading
from types import SimpleNamespace

import pytest

from conformance.dra import shards
from conformance.runner import device_slots, parallel, timings

DRIVER = "gpu.example.com"
TYPES = {"index": "int"}


def _devices(per_node=(4, 4), **extra) -> list[dict]:
    return [
        {"node": f"n{n}", "pool": f"n{n}", "device": f"gpu-{i}", "attributes": {"index": i}, "attribute_types": TYPES}
        | extra
        for n, count in enumerate(per_node)
        for i in range(count)
    ]


def _plan(devices):
    return shards.plan(DRIVER, devices, shards.slot_count(devices))


def test_one_slot_per_device_of_the_smallest_node_and_a_selector_for_several():
    plan = _plan(_devices(per_node=(4, 6)))
    assert plan.shards == 4 and plan.usable == (0, 1, 2, 3)  # the 6-device node has two slots with two devices
    assert plan.selector_of([3, 1]) == f'device.attributes["{DRIVER}"].index in [1, 3, 5]'
    assert plan.selector_of([0]) == f'device.attributes["{DRIVER}"].index in [0, 4]'
    with pytest.raises(IndexError):
        plan.selector_of([4])
    assert shards.slot_count([]) == 0


def test_a_slot_whose_only_device_on_a_node_is_tainted_is_not_usable():
    devices = _devices()
    devices[1]["taints"] = [{"key": "k", "effect": "NoSchedule"}]  # n0's gpu-1
    assert _plan(devices).usable == (0, 2, 3)


def test_holders_get_disjoint_slots_and_a_waiter_gets_them_when_given_back(tmp_path):
    first, second, third = (device_slots.DeviceSlots(tmp_path, range(4)) for _ in range(3))
    assert first.take(2, start=0) == [0, 1]
    assert second.take(1, start=0) == [2]  # the first free one from its place on, without waiting
    got = []
    waiter = threading.Thread(target=lambda: got.append(third.take(2, start=1)), daemon=True)
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # only slot 3 is free: it waits for its set from its place on, in slot order
    first.give_back()
    waiter.join(0.3)
    assert waiter.is_alive()  # it holds slot 1 now and waits for 2 (a waiter never skips ahead: no deadlock)
    second.give_back()
    waiter.join(5)
    assert got == [[1, 2]], got
    third.give_back()
    assert not list(tmp_path.glob(".dra-slot-*.held"))


def test_more_slots_than_usable_leaves_the_test_unsharded(tmp_path):
    assert device_slots.DeviceSlots(tmp_path, (0, 1)).take(3) is None


def test_a_slot_left_marked_by_a_dead_holder_is_never_taken_again(tmp_path):
    (tmp_path / device_slots.SLOT_MARK.format(0)).write_text("12345")  # its holder died before giving it back
    slots = device_slots.DeviceSlots(tmp_path, range(3))
    assert slots.take(2, start=0) == [1, 2] and slots.poisoned == {0}
    slots.give_back()
    assert (tmp_path / device_slots.SLOT_MARK.format(0)).exists()  # every other process learns it too
    assert device_slots.DeviceSlots(tmp_path, range(3)).take(3) is None


def _item(*marks, exclusive=False, window=False):
    found = {"shard_devices": [SimpleNamespace(args=a, kwargs={}) for a in marks]}
    if exclusive:
        found["xdist_group"] = [SimpleNamespace(args=("dra-cluster-state",), kwargs={})]
    if window:
        found["long_window"] = [SimpleNamespace(args=(), kwargs={})]
    return SimpleNamespace(
        get_closest_marker=lambda name: (found.get(name) or [None])[0],
        iter_markers=lambda name: found.get(name, []),
        name=f"{marks}-{exclusive}-{window}",
    )


def test_the_guard_takes_as_many_slots_as_the_mark_asks_and_the_shard_is_their_selector(tmp_path):
    locks = parallel.RunLocks(tmp_path)
    guard = parallel.ParallelGuard(locks, 1, 4, lambda: (DRIVER, _devices()))
    assert [guard.need(_item(())), guard.need(_item((2,))), guard.need(_item((5,)))] == [1, 2, 0]
    assert guard.need(_item()) == 0 and guard.need(_item((), exclusive=True)) == 0
    assert parallel.ParallelGuard(parallel.RunLocks(tmp_path), 1, 4, lambda: None).need(_item(())) == 0
    locks.begin(False)
    locks.take_slots(guard.plan(), 2, start=2)
    assert locks.slots == [2, 3] and locks.shard == f'device.attributes["{DRIVER}"].index in [2, 3]'
    locks.end()
    assert locks.slots == [] and device_slots.DeviceSlots(tmp_path, range(4)).take(4) == [0, 1, 2, 3]


def _sharded_test(tmp_path) -> parallel.RunLocks:
    """A test holding one slot of a 2-node, 4-GPU plan (slot 0)."""
    locks = parallel.RunLocks(tmp_path)
    guard = parallel.ParallelGuard(locks, 0, 2, lambda: (DRIVER, _devices()))
    locks.begin(False)
    locks.take_slots(guard.plan(), 1, start=0)
    return locks


def test_a_test_that_released_its_devices_gives_its_slots_back_and_may_create_no_more(tmp_path):
    locks = _sharded_test(tmp_path)
    config, tracker = (
        SimpleNamespace(stash={parallel.LOCKS: locks}),
        SimpleNamespace(before_create=[], after_release=[]),
    )
    parallel.guard(config, tracker)
    tracker.before_create[0]({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    tracker.after_release[0]()
    assert device_slots.DeviceSlots(tmp_path, [0]).take(1) == [0]  # free for others during the window
    with pytest.raises(parallel.ShardError, match="after the test gave its device slots back"):
        tracker.before_create[0]({"kind": "Pod", "metadata": {"name": "late"}, "spec": {}})
    assert locks.slots == [0]  # still recorded for the overlap check
    locks.end()


def test_order_is_the_block_then_tests_holding_every_device_then_sharded_long_windows_first(tmp_path):
    guard = parallel.ParallelGuard(parallel.RunLocks(tmp_path), 0, 2, lambda: None)
    sharded, alone, block, window = _item(()), _item(), _item(exclusive=True), _item(window=True)
    sharded_window = _item((), window=True)
    items = [sharded, sharded_window, window, alone, block]
    guard.pytest_collection_modifyitems(items)
    assert items == [block, alone, window, sharded_window, sharded] and guard.exclusive_ahead


def test_overlap_check_reads_slots():
    rows = [
        {"id": "a", "lock": "shard", "shard": "x", "slots": [0, 1], "start": 1.0, "stop": 9.0, "devices_at": 2.0},
        {"id": "b", "lock": "shard", "shard": "y", "slots": [2], "start": 1.0, "stop": 9.0, "devices_at": 2.0},
        {"id": "c", "lock": "shard", "shard": "z", "slots": [1, 3], "start": 5.0, "stop": 12.0, "devices_at": 6.0},
    ]
    assert timings.overlaps(rows) == ["a and c (both started pods)"]  # selectors differ, slot 1 in both


def test_once_a_test_waits_for_every_device_no_sharded_test_starts_pods_before_it(tmp_path):
    """The device turnstile: without it, sharded tests overlapping one another kept the device lock from ever
    being free (s17: a prioritized-list test queued 117 s)."""
    running, whole, late = (parallel.RunLocks(tmp_path) for _ in range(3))
    for locks, shard in ((running, "s0"), (whole, ""), (late, "s1")):
        locks.begin(False, shard)
    running.need_devices()  # a sharded test has started its pods
    whole_in, late_in = threading.Event(), threading.Event()
    threading.Thread(target=lambda: (whole.need_devices(), whole_in.set()), daemon=True).start()
    assert not whole_in.wait(0.3)  # waits for the running sharded test
    threading.Thread(target=lambda: (late.need_devices(), late_in.set()), daemon=True).start()
    assert not late_in.wait(0.3)  # a shared holder is there, yet the late sharded test waits its turn
    running.end()
    assert whole_in.wait(5) and not late_in.wait(0.3)
    whole.end()
    assert late_in.wait(5) and late.kind == "shard"
    late.end()


def test_a_mark_that_cannot_be_written_leaves_the_test_unsharded_and_holding_nothing(tmp_path, monkeypatch):
    """Breaker s17 F1: an OSError (a full report disk) was an INTERNALERROR that ended the run."""

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(device_slots.Path, "write_text", full)
    slots = device_slots.DeviceSlots(tmp_path, (0, 1))
    assert slots.take(1) is None and slots.held == []
    monkeypatch.undo()
    assert device_slots.DeviceSlots(tmp_path, (0, 1)).take(2) == [0, 1]  # nothing left locked or marked


def test_a_test_whose_teardown_failed_gives_its_slots_back_poisoned(tmp_path):
    """Breaker s17 F2: its pods may still hold the devices (a pod stuck terminating): no sharded test takes them."""
    locks = _sharded_test(tmp_path)
    assert locks.slots == [0]
    locks.end(poison=True)
    assert device_slots.DeviceSlots(tmp_path, range(4)).take(4) is None  # slot 0 is out for good
    assert device_slots.DeviceSlots(tmp_path, range(4)).take(3) == [1, 2, 3]


def test_the_controller_removes_an_earlier_run_s_slot_marks_and_gate_when_the_run_starts(tmp_path):
    """Breaker s17 F3: a killed run's marks in a reused report dir poisoned every slot of the next run."""
    for i in range(4):
        (tmp_path / device_slots.SLOT_MARK.format(i)).write_text("1")
    (tmp_path / parallel.GATE_FILE).write_text(".\n" * 50)
    parallel.LockFilesCleanup(tmp_path).pytest_sessionstart(session=None)
    assert list(tmp_path.iterdir()) == []
    assert device_slots.DeviceSlots(tmp_path, range(4)).take(4) == [0, 1, 2, 3]


def test_uuids_unique_in_the_cluster_give_every_slot_a_device_on_every_node():
    """Breaker s17 F4: ranking all values together left slots without a device on some node (interleaved UUIDs
    gave usable slots (0, 1) only; interleaved ints none)."""
    uuids = {"n0": ["a", "c", "e", "g"], "n1": ["b", "d", "f", "h"]}
    devices = [
        {"node": n, "attributes": {"uuid": u}, "attribute_types": {"uuid": "string"}}
        for n, us in uuids.items()
        for u in us
    ]
    plan = _plan(devices)
    assert plan.usable == (0, 1, 2, 3) and plan.selector_of([0]) == f'device.attributes["{DRIVER}"].uuid in ["a", "b"]'
    clashing = [  # value 1 is rank 1 on n0 and rank 0 on n1: ranked together instead, never in two slots
        {"node": n, "attributes": {"index": i}, "attribute_types": TYPES}
        for n, idx in (("n0", [0, 1]), ("n1", [1, 2]))
        for i in idx
    ]
    by_value = {v: s for s, values in _plan(clashing).by_shard.items() for v in values}
    assert by_value == {0: 0, 1: 1, 2: 0}
