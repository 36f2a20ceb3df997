"""`make e2e-makespan` / `make e2e-durations`: the order of `make test`'s parallel e2e phase (issue 26 §2).

The phase runs on ``-n 3 --dist loadgroup --no-loadscope-reorder``: xdist hands out *work units* (a test, or every
test of one ``xdist_group``) in collection order, two to each worker at first, then one more to a worker each time
it has two tests or fewer left (xdist 3.8 ``LoadScopeScheduling._reschedule``). tests/e2e/conftest.py orders the
units longest first from :data:`DURATIONS` (seconds per node ID, checked in), so the long ones do not start last.

* ``simulate``: the expected makespan of that phase (a list-scheduling simulation of the scheduler above) for the
  order the old rule gave (``slow``-marked tests first, otherwise collection order) and for the order the conftest
  gives now, on ``--workers`` (default 3, more may be listed: ``--workers 3 4``).
* ``refresh``: rewrite :data:`DURATIONS` from a JUnit XML of the phase (``make test`` writes
  reports/e2e-parallel.xml; a test's ``time`` there is its setup + call + teardown) or from a ``--durations``
  log (the phases of each listed test summed).

Sources: pytest-xdist 3.8 xdist/scheduler/loadscope.py and loadgroup.py (``<id>@<group>`` scopes); pytest's
JUnit XML (``testcase`` ``classname``/``name``/``time``).
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the source tree of an editable install (site-packages/.. from a wheel)
RELATIVE = Path("tests") / "e2e" / "durations.json"


def durations_path(cwd: Path | None = None) -> Path:
    """The repository's ``tests/e2e/durations.json``: beside this module's source tree (an editable install), else
    in the repository holding ``cwd`` (default the current directory: the nearest folder, upwards, that has it;
    a tools wheel lies in site-packages, whose ``..`` has none: breaker s13 B7); else ``cwd``'s, which does not
    exist (callers say so)."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    for root in (REPO, cwd, *cwd.resolve().parents):
        if (root / RELATIVE).is_file():
            return root / RELATIVE
    return cwd / RELATIVE


DURATIONS = durations_path()
PHASE = ["-m", "e2e and not cluster_lifecycle"]  # the Makefile's parallel phase
DEFAULT_S, SLOW_S = 3.0, 60.0  # seconds assumed for a test the file lacks (marked `slow`: SLOW_S)


def load(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per node ID from ``path`` (``{"seconds": {...}}``); empty when it is missing or unreadable."""
    try:
        return {k: float(v) for k, v in json.loads(Path(path).read_text())["seconds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def expected(nodeid: str, slow: bool, seconds: dict[str, float]) -> float:
    """Seconds expected for ``nodeid``: its recorded time, else :data:`SLOW_S` for a ``slow`` test, else
    :data:`DEFAULT_S`."""
    return seconds.get(nodeid, SLOW_S if slow else DEFAULT_S)


def units(entries: list[tuple[str, str | None, float]]) -> list[list[float]]:
    """xdist's work units in queue order from ``entries`` ``(node ID, xdist group or None, seconds)`` in collection
    order: one per group (at its first test), one per ungrouped test; each the list of its tests' seconds."""
    queue: dict[str, list[float]] = {}
    for nodeid, group, secs in entries:
        queue.setdefault(f"@{group}" if group else nodeid, []).append(secs)
    return list(queue.values())


def makespan(work: list[list[float]], workers: int) -> float:
    """Seconds until the last of ``work`` (units in queue order, :func:`units`) ends on ``workers`` workers under
    xdist's loadscope scheduler: each worker gets one unit, then one more where that left it two tests or fewer;
    after each finished test, a worker with two pending tests or fewer gets the next unit. Tests of one worker
    run one after another, in the order received. ValueError when ``workers`` < 1."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    queue, pending = deque(work), [deque() for _ in range(workers)]
    for rnd in range(2):
        for w in range(workers):
            if queue and (rnd == 0 or len(pending[w]) <= 2):
                pending[w].extend(queue.popleft())
    ends = [(pending[w][0], w) for w in range(workers) if pending[w]]
    heapq.heapify(ends)
    last = 0.0
    while ends:
        now, w = heapq.heappop(ends)
        last = now
        pending[w].popleft()
        if queue and len(pending[w]) <= 2:
            pending[w].extend(queue.popleft())
        if pending[w]:
            heapq.heappush(ends, (now + pending[w][0], w))
    return last


def collect(args: list[str]) -> tuple[list, list]:
    """``(before, after)``: the phase's tests as ``(node ID, xdist group, slow)`` in the order collection gave
    before the project's conftest reordered them and after (pytest ``--collect-only`` in this process)."""
    import pytest  # noqa: PLC0415 - only this command needs pytest

    seen: dict[str, list] = {}

    class Recorder:
        @pytest.hookimpl(wrapper=True)
        def pytest_collection_modifyitems(self, items):
            seen["before"] = [(i.nodeid, None, bool(i.get_closest_marker("slow"))) for i in items]
            result = yield
            seen["after"] = [(i.nodeid, _group(i), bool(i.get_closest_marker("slow"))) for i in items]
            return result

    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *PHASE, *args], plugins=[Recorder()])
    if "after" not in seen:
        raise SystemExit(f"collection failed (pytest exit {code}): run `pytest --collect-only {' '.join(PHASE)}`")
    groups = {nodeid: group for nodeid, group, _ in seen["after"]}  # only the phase's tests (-m deselects later)
    return [(n, groups[n], s) for n, _, s in seen["before"] if n in groups], seen["after"]


def _group(item) -> str | None:
    marks = sorted({str(m.args[0] if m.args else m.kwargs.get("name")) for m in item.iter_markers("xdist_group")})
    return "_".join(marks) or None


def slow_first(entries: list) -> list:
    """The old order: ``slow`` tests first, otherwise as collected (a stable sort)."""
    return sorted(entries, key=lambda e: not e[2])


def read_junit(path: Path) -> dict[str, float]:
    """Seconds per node ID from a pytest JUnit XML (``classname`` ``tests.e2e.test_x`` -> ``tests/e2e/test_x.py``)."""
    out: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        out[f"{module}::{case.get('name')}"] = round(float(case.get("time") or 0), 2)
    return out


def read_log(path: Path) -> dict[str, float]:
    """Seconds per node ID from pytest ``--durations`` lines (``12.34s call  <id>``; the phases summed)."""
    out: dict[str, float] = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        m = re.match(r"\s*([\d.]+)s (setup|call|teardown)\s+(\S+)", line)
        if m:
            out[m.group(3)] = round(out.get(m.group(3), 0.0) + float(m.group(1)), 2)
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring). Exit 0; 2 on a bad argument (argparse), or when the durations file is not found
    (outside the repository without ``--durations`` / ``--out``) or holds no durations (``simulate``)."""
    parser = argparse.ArgumentParser(prog="python -m conformance_tools.e2e_order", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sim = sub.add_parser("simulate", help="expected makespan of the parallel phase, old order vs the conftest's")
    sim.add_argument("--workers", type=int, nargs="+", default=[3])
    sim.add_argument("--durations", type=Path, default=None, help=f"default: the repository's {RELATIVE}")
    ref = sub.add_parser("refresh", help=f"rewrite the repository's {RELATIVE} from a JUnit XML or a log")
    src = ref.add_mutually_exclusive_group(required=True)
    src.add_argument("--junit", type=Path)
    src.add_argument("--log", type=Path)
    ref.add_argument("--out", type=Path, default=None, help=f"default: the repository's {RELATIVE}")
    opts = parser.parse_args(argv)
    where = opts.durations if opts.cmd == "simulate" else opts.out
    if where is None and not durations_path().is_file():  # outside the repository (an installed tools wheel)
        print(
            f"{durations_path()} not found: run from the dra-conformance repository, or pass --"
            f"{'durations' if opts.cmd == 'simulate' else 'out'} FILE (without it every test would be priced at "
            f"{DEFAULT_S:.0f} s, or {SLOW_S:.0f} s when marked slow)",
            file=sys.stderr,
        )
        return 2
    opts.durations = opts.out = where or durations_path()
    if opts.cmd == "refresh":
        seconds = read_junit(opts.junit) if opts.junit else read_log(opts.log)
        doc = {"source": str(opts.junit or opts.log), "seconds": dict(sorted(seconds.items()))}
        opts.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{opts.out}: {len(seconds)} test(s), {sum(seconds.values()):.0f} s in all")
        return 0
    seconds = load(opts.durations)
    if not seconds:
        print(f'{opts.durations}: no durations read (missing or not {{"seconds": {{...}}}})', file=sys.stderr)
        return 2
    before, after = collect([])
    for name, entries in (("slow first (old)", slow_first(before)), ("conftest order (now)", after)):
        work = units([(n, g, expected(n, s, seconds)) for n, g, s in entries])
        total = sum(map(sum, work))
        for w in opts.workers:
            print(
                f"{name:22} {w} workers: makespan {makespan(work, w):5.0f} s (lower bound {total / w:.0f} s, "
                f"longest unit {max(map(sum, work)):.0f} s, {len(work)} units)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
