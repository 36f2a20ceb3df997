"""design.md §10: state.py, claims.py, cdi.py, checkpoint.py and the pure part of slices.py import neither
grpc nor kubernetes (checked in a fresh interpreter, so other tests' imports do not interfere)."""

from __future__ import annotations

import subprocess
import sys

PURE = [
    "reference_driver.state",
    "reference_driver.claims",
    "reference_driver.cdi",
    "reference_driver.checkpoint",
    "reference_driver.slices",
    "reference_driver.opaque",
    "reference_driver.faults",
    "reference_driver.inventory",
    "reference_driver.devicestatus",
    "reference_driver.claimstatus",
]


def test_pure_modules_import_no_grpc_or_kubernetes():
    code = (
        "import sys, importlib\n"
        f"for m in {PURE!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'kubernetes', 'conformance')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout
