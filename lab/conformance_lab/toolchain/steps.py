"""A tiny step runner for `make setup`: progress lines, a timing line per step, one clear error.

Each step prints ``[i/N] <name> ...`` when it starts and ``[i/N] <name>: <result> (<seconds> s)`` when it
ends; downloads (background steps, Go module prefetches) run beside the builds. A failing step raises
:class:`SetupError`, which names the step, what went wrong and the fix.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
import time
from collections.abc import Callable


class SetupError(RuntimeError):
    """A setup step failed. ``step`` names it, ``detail`` says what happened, ``fix`` what to do."""

    def __init__(self, step: str, detail: str, fix: str):
        super().__init__(f"setup step '{step}' failed: {detail}\n  fix: {fix}")
        self.step, self.detail, self.fix = step, detail, fix


@dataclasses.dataclass
class Step:
    """One named setup step; ``run`` returns a short result string (e.g. "cached" or "built").

    ``prefetch`` (optional): the step's downloads (Go modules), started at once beside the other steps; ``run``
    receives its result. ``background``: the whole step runs beside the others (downloads and installs that
    need no CPU-heavy build, e.g. Debian packages, npm). ``needs``: names of background steps ``run`` waits for.
    """

    name: str
    run: Callable[..., str]
    prefetch: Callable[[], object] | None = None
    background: bool = False
    needs: tuple[str, ...] = ()


PARALLEL_DOWNLOADS = 3  # background steps and prefetches at once (network bound; the two cores build)


def _failed(prefix: str, start: float, out) -> None:
    print(f"{prefix}: FAILED after {time.monotonic() - start:.1f} s", file=out, flush=True)


def _unexpected(step: Step, exc: Exception) -> SetupError:
    """An unexpected error still names its step."""
    return SetupError(
        step.name,
        f"{type(exc).__name__}: {exc}",
        "see the message above; re-run `make setup` (it resumes where it stopped)",
    )


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    return fn(), time.monotonic() - start


def run_steps(steps: list[Step], out=None) -> float:
    """Run steps, printing progress and timings; return total seconds. Raises SetupError.

    Background steps and every prefetch start first on a pool of PARALLEL_DOWNLOADS threads; the other steps
    run one after another in order, each after its own prefetch and its ``needs``. A background step prints its
    line when it ends; the run ends when all have ended.
    """
    out = out or sys.stdout
    total = time.monotonic()
    n = len(steps)
    pool = concurrent.futures.ThreadPoolExecutor(PARALLEL_DOWNLOADS, thread_name_prefix="setup")
    try:
        bg = {s.name: pool.submit(_timed, s.run) for s in steps if s.background}
        pre = {s.name: pool.submit(_timed, s.prefetch) for s in steps if s.prefetch and not s.background}
        for i, step in enumerate(steps, 1):
            prefix = f"[{i}/{n}] {step.name}"
            if step.background:
                print(f"{prefix} ... (in the background)", file=out, flush=True)
                continue
            print(f"{prefix} ...", file=out, flush=True)
            start = time.monotonic()
            try:
                for need in step.needs:
                    _background_done(steps, bg, need, n, out)
                args = []
                if step.name in pre:
                    fetched, secs = pre[step.name].result()
                    if fetched is not None:  # None: cached, nothing to download
                        done = f"{prefix}: downloads done ({secs:.1f} s, started at the beginning)"
                        print(done, file=out, flush=True)
                    args = [fetched]
                result = step.run(*args)
            except SetupError:
                _failed(prefix, start, out)
                raise
            except Exception as exc:
                _failed(prefix, start, out)
                raise _unexpected(step, exc) from exc
            print(f"{prefix}: {result} ({time.monotonic() - start:.1f} s)", file=out, flush=True)
        for name in list(bg):
            _background_done(steps, bg, name, n, out)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    elapsed = time.monotonic() - total
    print(f"setup: all {n} steps done in {elapsed:.1f} s", file=out, flush=True)
    return elapsed


def _background_done(steps: list[Step], bg: dict, name: str, n: int, out) -> None:
    """Wait for background step ``name``; print its line once. Raises SetupError when it failed."""
    i, step = next((i, s) for i, s in enumerate(steps, 1) if s.name == name)
    fut = bg.pop(name, None)
    if fut is None:  # reported already
        return
    start = time.monotonic()
    try:
        result, secs = fut.result()
    except SetupError:
        _failed(f"[{i}/{n}] {name}", start, out)
        raise
    except Exception as exc:
        _failed(f"[{i}/{n}] {name}", start, out)
        raise _unexpected(step, exc) from exc
    print(f"[{i}/{n}] {name}: {result} ({secs:.1f} s, in the background)", file=out, flush=True)
