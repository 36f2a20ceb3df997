"""The end marker of the visibility probe: the shell script a probe container runs, and how its output is read.

A probe container runs the profile's vendor command (``env``, ``nvidia-smi -L``...) in a subshell, then
prints one line ``DRA_CONFORMANCE_PROBE_END rc=<exit status of the command>``. The marker proves the probe
ran to its end: output without it (an empty log, a container that crashed, a command that never returned)
proves nothing, so no check may judge it (design.md §11: "a negative check proves its probe ran").
Pure: builds and parses text, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

END = "DRA_CONFORMANCE_PROBE_END"
_END_LINE = re.compile(rf"^{END} rc=(\d+)\r?$", re.M)
# sh exit statuses meaning the vendor command did not run at all: 126 not executable, 127 not found,
# >128 killed by a signal (POSIX sh "Exit Status").
DID_NOT_RUN_RC = (126, 127)


def script(command: str, then_sleep: bool = True) -> str:
    """The ``sh -c`` script of a probe container: ``command`` in a subshell (an ``exit`` in it cannot skip
    the marker), a newline (the marker starts its own line even after output without one), the marker with
    the command's exit status, then either ``sleep 100000`` (the container stays Running) that ends at once
    on SIGTERM (trapped before the marker is printed: a shell that is PID 1 ignores an untrapped SIGTERM, and
    the pod's deletion would wait out its grace period), or, with ``then_sleep=False``, exit with that
    status. Raises ValueError for an empty ``command``."""
    if not command.strip():
        raise ValueError("the probe command is empty: set visibility.command in the driver profile (e.g. env)")
    trap, end = (
        ("trap 'kill $! 2>/dev/null; exit 0' TERM\n", "sleep 100000 &\nwait") if then_sleep else ("", 'exit "$rc"')
    )
    return f'(\n{command}\n)\nrc=$?\n{trap}echo\necho "{END} rc=$rc"\n{end}\n'


@dataclass(frozen=True)
class ProbeRun:
    """What a probe container printed. ``output``: the vendor command's output (everything before the marker;
    the whole text when there is none); ``rc``: the command's exit status, None when the marker is missing."""

    output: str
    rc: int | None

    @property
    def ended(self) -> bool:
        """True when the marker was printed (the probe ran to its end)."""
        return self.rc is not None

    @property
    def command_missing(self) -> bool:
        """True when the shell could not run the vendor command (exit 126/127) or a signal killed it (> 128)."""
        return self.rc is not None and (self.rc in DID_NOT_RUN_RC or self.rc > 128)


def parse(text: str) -> ProbeRun:
    """Split a probe container's log ``text`` at the first end-marker line. Text after the marker (none for a
    probe container) is dropped; so is the blank line :func:`script` prints before the marker."""
    match = _END_LINE.search(text)
    if match is None:
        return ProbeRun(text, None)
    before = text[: match.start()]
    if before.endswith("\n\n") or before == "\n":
        before = before[:-1]
    return ProbeRun(before, int(match.group(1)))
