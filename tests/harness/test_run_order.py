"""The order of a parallel run (issue 26 §1): cluster-exclusive tests first, then long_window tests, which wait
for the exclusive block to begin before their run lock (conformance.runner.parallel)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from conformance.runner import parallel


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


def test_exclusive_tests_come_first_then_long_windows_then_the_rest_as_collected(tmp_path):
    guard = _guard(tmp_path)
    items = [_item("a"), _item("w", window=True), _item("x", exclusive=True), _item("b"), _item("y", exclusive=True)]
    guard.pytest_collection_modifyitems(items)
    assert [i.name for i in items] == ["x", "y", "w", "a", "b"] and guard.exclusive_ahead
    alone = [_item("a"), _item("w", window=True)]
    guard.pytest_collection_modifyitems(alone)
    assert [i.name for i in alone] == ["w", "a"] and not guard.exclusive_ahead


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
