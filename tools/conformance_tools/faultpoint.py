"""A pytest plugin that hands a running test to whoever injects a cluster fault, at a known point (issue 27 §2).

Loaded into a run with ``dra-conformance run ... -- -p conformance_tools.faultpoint`` and two environment
variables: ``DRA_FAULTPOINT_TEST`` (a substring of the target test's node ID) and ``DRA_FAULTPOINT_DIR`` (a
directory both sides can write). The handshake, by files in that directory:

1. when the target test's call phase starts (its fixtures are set up: namespace, driver), the plugin writes
   ``started`` (JSON: ``{"nodeid", "run_id", "report_dir"}``) and waits for ``go``: the injector applies the fault
   (stops the API server, cuts its network path, revokes the credentials, fills the disk) and writes ``go``;
2. the test body then runs against the broken cluster;
3. when the call phase has ended (before evidence is collected and before teardown), the plugin writes ``ended``
   and waits for ``restored``: the injector repairs what can be repaired and writes ``restored``, so the
   teardown runs on the cluster as it now is.

Each wait is bounded by ``DRA_FAULTPOINT_TIMEOUT`` seconds (default 300); when it runs out the plugin says so on
stderr and goes on (a run never hangs on a missing injector). No other test is touched.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

STARTED, GO, ENDED, RESTORED = "started", "go", "ended", "restored"


def _target(item) -> Path | None:
    want, where = os.environ.get("DRA_FAULTPOINT_TEST", ""), os.environ.get("DRA_FAULTPOINT_DIR", "")
    return Path(where) if want and where and want in item.nodeid else None


def wait_file(path: Path, timeout: float) -> bool:
    """Wait (bounded, ``timeout`` seconds) until ``path`` exists; True when it does."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _handshake(where: Path, mine: str, theirs: str, body: dict) -> None:
    part = where / f".{mine}.part"  # written whole, then renamed: the tool polls for the name and reads it at once
    part.write_text(json.dumps(body), encoding="utf-8")
    os.replace(part, where / mine)
    timeout = float(os.environ.get("DRA_FAULTPOINT_TIMEOUT", "300"))
    if not wait_file(where / theirs, timeout):
        print(f"faultpoint: no {theirs!r} in {where} after {timeout:.0f} s; going on", file=sys.stderr)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """Before the target test's body: ``started``, then wait for ``go``."""
    where = _target(item)
    if where is not None:
        opt = item.config.option
        run_id = getattr(opt, "run_id", "") or ""
        _handshake(
            where,
            STARTED,
            GO,
            {"nodeid": item.nodeid, "run_id": run_id, "report_dir": str(getattr(opt, "report_dir", "") or "")},
        )


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """After the target test's body (before evidence and teardown): ``ended``, then wait for ``restored``."""
    where = _target(item)
    if where is not None and call.when == "call":
        _handshake(where, ENDED, RESTORED, {"nodeid": item.nodeid, "failed": call.excinfo is not None})
    yield
