"""Whole-number Kubernetes quantities: parse ``"80Gi"`` / ``"1G"`` / ``"4096"`` and print them the way the
API server canonicalises them, so published ResourceSlices do not churn on re-read.

Only integers are handled (device memory and counters are byte counts); fractional quantities raise.
Source: k8s.io/apimachinery pkg/api/resource (suffixes, canonical form).
"""

from __future__ import annotations

import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_RE = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def parse(value: str | int) -> int:
    """Parse a whole-number quantity into an int (bytes for memory).

    Raises ValueError naming the value and the accepted form for anything else (fractions, milli, exponents).
    """
    if isinstance(value, bool):
        raise ValueError(f"quantity {value!r}: expected an integer or a string like '80Gi'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"quantity {value!r} must not be negative")
        return value
    m = _RE.match(str(value).strip())
    if not m:
        raise ValueError(
            f"quantity {value!r}: expected a whole number with an optional suffix "
            f"({', '.join([*_BINARY, *_DECIMAL])}), e.g. '80Gi'"
        )
    number, suffix = int(m.group(1)), m.group(2)
    return number * (_BINARY.get(suffix) or _DECIMAL.get(suffix) or 1)


def canonical(value: int, binary: bool = True) -> str:
    """Canonical string of ``value``: the largest suffix that divides it exactly (binary ``Ki..Ei`` when
    ``binary``, else decimal ``k..E``), or the plain number."""
    table = _BINARY if binary else _DECIMAL
    for suffix, factor in sorted(table.items(), key=lambda kv: -kv[1]):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)
