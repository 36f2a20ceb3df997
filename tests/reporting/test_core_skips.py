"""The core-never-skips rule (issue 24 §3): conformance.reporting.core_skips."""

from conformance.reporting.core_skips import core_skip_failures
from conformance.reporting.results import TestRecord as Record


def _record(name, status, profile, message=""):
    return Record(name, f"suites.{name}", name, status, message, "", {"profile": [profile]}, {}, [], 0, 0)


def test_a_skipped_core_test_is_a_failure_naming_it_and_its_reason():
    records = [
        _record("kep5970_7", "skipped", "core", "no group of devices fits together"),
        _record("kep5970_1", "passed", "core"),
        _record("multi_node", "skipped", "standard", "multi_node not available"),
    ]
    assert core_skip_failures(records) == ["suites.kep5970_7: core test skipped: no group of devices fits together"]
    assert core_skip_failures(records[1:]) == []
