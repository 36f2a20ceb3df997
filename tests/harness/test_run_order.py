"""The order of a parallel run (issue 26 §1): cluster-exclusive tests first, long_window tests wait for the
exclusive block to begin before their run lock, sharded tests wait at the gate (conformance.runner.run_order)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from conformance.runner import parallel, run_order


def _item(name, exclusive=False, window=False):
    found = {"xdist_group": [SimpleNamespace(args=("dra-cluster-state",), kwargs={})] if exclusive else []}
    found[parallel.WINDOW_MARK] = [SimpleNamespace(args=(), kwargs={})] if window else []
    return SimpleNamespace(
        name=name,
        get_closest_marker=lambda mark: (found.get(mark) or [None])[0],
        iter_markers=lambda mark: found.get(mark, []),
    )


def _guard(tmp_path) -> parallel.ParallelGuard:
    return parallel.ParallelGuard(parallel.RunLocks(tmp_path), 1, 4, lambda: None)


def test_exclusive_tests_come_first_then_the_rest_as_collected_and_their_long_windows_last(tmp_path):
    guard = _guard(tmp_path)
    items = [_item("a"), _item("w", window=True), _item("x", exclusive=True), _item("b"), _item("y", exclusive=True)]
    guard.pytest_collection_modifyitems(items)
    assert [i.name for i in items] == ["x", "y", "a", "b", "w"] and guard.exclusive_ahead
    alone = [_item("w", window=True), _item("a")]
    guard.pytest_collection_modifyitems(alone)
    assert [i.name for i in alone] == ["a", "w"] and not guard.exclusive_ahead


def test_a_long_window_test_starts_only_once_the_exclusive_block_has_begun(tmp_path):
    guard, window = _guard(tmp_path), _item("w", window=True)
    guard.pytest_collection_modifyitems([window, _item("x", exclusive=True)])
    done = threading.Event()
    threading.Thread(target=lambda: (guard.wait_for_block(window), done.set()), daemon=True).start()
    assert not done.wait(0.5), "started before the exclusive block"
    block = parallel.RunLocks(tmp_path)
    block.begin(True)  # the block's worker, once it holds the run lock
    assert done.wait(5), "still waiting after the block began"
    block.end()


def test_other_tests_and_runs_without_a_block_never_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "BLOCK_WAIT_S", 0.3)
    guard = _guard(tmp_path)
    guard.pytest_collection_modifyitems([_item("x", exclusive=True)])
    start = time.monotonic()
    guard.wait_for_block(_item("a"))
    assert time.monotonic() - start < 0.1
    guard.wait_for_block(_item("w", window=True))  # the block never begins: bounded
    assert 0.25 < time.monotonic() - start < 2
    guard.pytest_collection_modifyitems([_item("a")])
    start = time.monotonic()
    guard.wait_for_block(_item("w", window=True))
    assert time.monotonic() - start < 0.1


def _sharded(name, window=False):
    item = _item(name, window=window)
    marks = {parallel.SHARD_MARK: [SimpleNamespace(args=(), kwargs={})]}
    inner = item.get_closest_marker
    item.get_closest_marker = lambda mark: (marks.get(mark) or [None])[0] or inner(mark)
    return item


def test_a_sharded_test_waits_at_the_gate_until_every_test_outside_shards_has_run(tmp_path):
    """s17: a sharded test starting between two tests holding every device kept the next one waiting 20 s."""
    worker, other = _guard(tmp_path), _guard(tmp_path)
    first, window, sharded = _item("a"), _item("w", window=True), _sharded("s")
    items = [sharded, window, first, _item("x", exclusive=True)]
    worker.pytest_collection_modifyitems(list(items))
    other.pytest_collection_modifyitems(list(items))
    assert worker.gate.before == 1  # the long window is not waited for: sharded tests run beside it
    done = threading.Event()
    threading.Thread(target=lambda: (worker.gate.wait(sharded), done.set()), daemon=True).start()
    assert not done.wait(0.5), "started before the tests outside shards ran"
    other.gate.finished(window)
    assert not done.wait(0.5)
    other.gate.finished(first)  # another worker ran it
    assert done.wait(5) and worker.gate.waited_s > 0.4


def test_the_gate_is_bounded_and_never_stops_other_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(run_order, "GATE_IDLE_S", 0.3)
    guard = _guard(tmp_path)
    guard.pytest_collection_modifyitems([_item("a"), _sharded("s")])
    start = time.monotonic()
    guard.gate.wait(_item("a"))
    guard.gate.wait(_item("w", window=True))
    assert time.monotonic() - start < 0.1
    guard.gate.wait(_sharded("s"))  # the test outside shards never finishes (a crashed worker): bounded
    assert 0.25 < time.monotonic() - start < 2 and guard.gate.open
    start = time.monotonic()
    guard.gate.wait(_sharded("s2"))  # open for good: the next sharded test does not wait again
    assert time.monotonic() - start < 0.1
    stopping = _guard(tmp_path)
    stopping.pytest_collection_modifyitems([_item("a"), _sharded("s")])
    item = _sharded("s")
    item.session = SimpleNamespace(shouldstop="-x: a test failed")
    start = time.monotonic()
    stopping.gate.wait(item)  # the session is stopping (-x): no wait for tests that will never run
    assert time.monotonic() - start < 0.5 and stopping.gate.open
    assert [run_order.rank(i) for i in (_item("x", exclusive=True), _item("a"), _item("w", window=True))] == [0, 1, 2]
    assert [run_order.rank(i) for i in (_sharded("s", window=True), _sharded("s"))] == [3, 4]


def test_sharded_long_windows_are_spread_one_every_three_sharded_tests():
    """s17: two long windows queued behind the 60 s one on a worker (xdist keeps 3 pending) ended the run late."""
    w1, w2, w3 = (_sharded(f"w{i}", window=True) for i in range(3))
    rest = [_sharded(f"s{i}") for i in range(5)]
    items = [*rest[:2], w1, w2, _item("a"), *rest[2:], w3]
    names = [i.name for i in run_order.ordered(items)]
    assert names == ["a", "w0", "s0", "s1", "w1", "s2", "s3", "w2", "s4"], names


def test_an_unwritable_or_unreadable_gate_file_opens_the_gate_and_never_ends_the_run(tmp_path):
    """Breaker s17 F1: an OSError (a full report disk) in the gate was an INTERNALERROR that ended the run."""
    guard = _guard(tmp_path)
    guard.pytest_collection_modifyitems([_item("a"), _sharded("s")])
    guard.gate.path.mkdir()  # any write or read of it fails with an OSError
    guard.gate.finished(_item("a"))
    assert guard.gate.open
    other = _guard(tmp_path)
    other.pytest_collection_modifyitems([_item("a"), _sharded("s")])
    start = time.monotonic()
    other.gate.wait(_sharded("s"))
    assert time.monotonic() - start < 0.5 and other.gate.open


def test_the_gate_waits_while_tests_keep_finishing(tmp_path, monkeypatch):
    monkeypatch.setattr(run_order, "GATE_IDLE_S", 0.6)
    guard = _guard(tmp_path)
    firsts = [_item(f"a{i}") for i in range(4)]
    guard.pytest_collection_modifyitems([*firsts, _sharded("s")])

    def finish_slowly():
        for item in firsts:
            time.sleep(0.4)  # each within the idle limit, together past it
            guard.gate.finished(item)

    threading.Thread(target=finish_slowly, daemon=True).start()
    guard.gate.wait(_sharded("s"))
    assert guard.gate.done() == 4 and not guard.gate.open and guard.gate.waited_s >= 1.5
