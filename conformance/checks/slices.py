"""What the API and KEP-4381 require of a driver's own ResourceSlices (placeholder: the rules are being written
on branch ``slices``; the signature is fixed so the after-module invariant hook can call it)."""

from __future__ import annotations

from collections.abc import Mapping

from conformance.checks.base import Violation
from conformance.k8s.objects import Obj


def check_slices(slices: list[Obj], driver: str, attributes: Mapping[str, str]) -> list[Violation]:
    """Violations of the slice rules by ``slices`` (every ResourceSlice of ``driver``, all pools and generations,
    as listed from the API); ``attributes``: the profile's declared ``{attribute name: type}``."""
    return []
