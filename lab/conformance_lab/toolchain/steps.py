"""A tiny step runner for `make setup`: progress lines, a timing line per step, one clear error.

Each step prints ``[i/N] <name> ...`` when it starts and ``[i/N] <name>: <result> (<seconds> s)`` when it
ends. A failing step raises :class:`SetupError`, which names the step, what went wrong and the fix.
"""

from __future__ import annotations

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
    """One named setup step; ``run`` returns a short result string (e.g. "cached" or "built")."""

    name: str
    run: Callable[[], str]


def run_steps(steps: list[Step], out=None) -> float:
    """Run steps in order, printing progress and timings; return total seconds. Raises SetupError."""
    out = out or sys.stdout
    total = time.monotonic()
    for i, step in enumerate(steps, 1):
        prefix = f"[{i}/{len(steps)}] {step.name}"
        print(f"{prefix} ...", file=out, flush=True)
        start = time.monotonic()
        try:
            result = step.run()
        except SetupError:
            print(f"{prefix}: FAILED after {time.monotonic() - start:.1f} s", file=out, flush=True)
            raise
        except Exception as exc:  # an unexpected error still names its step
            print(f"{prefix}: FAILED after {time.monotonic() - start:.1f} s", file=out, flush=True)
            raise SetupError(
                step.name,
                f"{type(exc).__name__}: {exc}",
                "see the message above; re-run `make setup` (it resumes where it stopped)",
            ) from exc
        print(f"{prefix}: {result} ({time.monotonic() - start:.1f} s)", file=out, flush=True)
    elapsed = time.monotonic() - total
    print(f"setup: all {len(steps)} steps done in {elapsed:.1f} s", file=out, flush=True)
    return elapsed
