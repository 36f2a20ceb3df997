"""Shared glue for every suite: the fixtures come from the ``dra_conformance`` plugin (conformance/plugin.py);
this file only enforces the marker vocabulary (design.md §3: exactly one profile marker and at least one
area marker per test), so a suite cannot silently escape profile selection or report grouping."""

import pytest

from conformance.api import markers

_AREAS = {m.name for m in markers.AREAS}
_PROFILES = {m.name for m in markers.PROFILES}


def pytest_collection_modifyitems(config, items):
    """Refuse suite tests without exactly one profile marker or without an area marker."""
    bad = []
    for item in items:
        names = {m.name for m in item.iter_markers()}
        if len(names & _PROFILES) != 1 or not names & _AREAS:
            bad.append(f"{item.nodeid}: profiles {sorted(names & _PROFILES)}, areas {sorted(names & _AREAS)}")
    if bad:
        raise pytest.UsageError(
            "suite tests need exactly one profile marker (core|standard|full|disruptive) "
            "and an area marker:\n  " + "\n  ".join(bad)
        )
