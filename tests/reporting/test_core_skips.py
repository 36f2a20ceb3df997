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


def _capability(name, available, evidence="", lacks=False):
    return {"name": name, "available": available, "evidence": evidence, "clusterLacks": lacks}


def test_a_core_skip_for_no_node_access_or_a_waiver_is_excused_one_for_the_driver_is_not():
    from conformance.reporting.core_skips import unexcused

    def rec(name, *features):
        r = _record(name, "skipped", "core", f"needs {features}")
        r.labels["feature"] = list(features)
        return r

    records = [rec("cdi", "driver.cdi"), rec("exec", "node_access"), rec("group", "driver.partitions")]
    caps = [
        _capability("driver.cdi", False, "the profile declares cdi: false"),
        _capability("node_access", False, "--node-access none"),
        _capability("driver.partitions", False, "no device fits"),
    ]
    assert unexcused(records, caps) == ["suites.group: core test skipped: needs ('driver.partitions',)"]
