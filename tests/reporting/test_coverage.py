"""Unit tests of conformance/reporting/coverage.py through summary._capabilities / verdict_reasons and
summary.md: a capability whose tests partly skipped for want of a fitting device is ``partial`` (review 5
finding 4), and only a declared driver feature that ends so fails the verdict."""

import jsonschema

from conformance.reporting import coverage, markdown, summary

P = "suites/partitions/test_partitions.py::"
FIXTURE_SKIP = "a partition of a shared counter set not available: no counter set ...; published (first devices): {}"


def _test(name, status, caps, reason=None):
    return {"id": P + name, "status": status, "reason": reason, "capabilities": caps}


def _verdict(tests, known):
    caps = summary._capabilities(tests, {"capabilities": known})
    return {c["name"]: c for c in caps}, summary.verdict_reasons({"executed": 1, "unknown": 0}, caps, tests)


DECLARED = {"driver.partitions": {"available": True, "declared": True, "evidence": "slices publish sharedCounters"}}


def test_declared_feature_with_a_fixture_skip_is_partial_and_fails_the_verdict():
    """The reviewer's /tmp/r5_sum2.py: test 1 skipped at fixture time, tests 2 and 3 passed."""
    tests = [
        _test("over", "skipped", ["driver.partitions"], FIXTURE_SKIP),
        _test("whole", "passed", ["driver.partitions"]),
        _test("exact", "passed", ["driver.partitions"]),
    ]
    caps, reasons = _verdict(tests, DECLARED)
    cap = caps["driver.partitions"]
    assert cap["status"] == "partial" and cap["coverage"] == {
        "run": 2,
        "skipped": 1,
        "gaps": [f"{P}over: {FIXTURE_SKIP}"],
    }
    assert reasons == [
        f"declared capability driver.partitions is partial: 1 of 3 test(s) could not run with the published "
        f"inventory: {P}over: {FIXTURE_SKIP}"
    ]
    schema = summary.schema()
    jsonschema.validate(cap, {**schema["$defs"]["capability"], "$defs": schema["$defs"]})
    text = "\n".join(markdown.coverage_gaps({"capabilities": list(caps.values())}))
    assert "## Coverage gaps" in text and "`driver.partitions` (fails the verdict): 2 of 3 test(s) ran" in text


def test_skips_for_another_capability_or_a_cluster_lack_are_excused():
    """The 1.34 reference run: driver.taints tests skipped for allocator.result_tolerations (a Kubernetes gap),
    and a node-access skip the cluster causes, keep the capability ``pass``."""
    tests = [
        _test("a", "passed", ["driver.taints"]),
        _test(
            "b",
            "skipped",
            ["allocator.result_tolerations", "driver.taints"],
            "allocator.result_tolerations not available: 1.34",
        ),
        _test("c", "skipped", ["driver.taints"], "node_access not available: no node access"),
        _test("d", "skipped", ["driver.taints"], "node access 'exec' cannot reach the DRA plugin socket of x: gone"),
    ]
    known = {
        "driver.taints": {"available": True, "declared": True, "evidence": "declared"},
        "allocator.result_tolerations": {"available": False, "evidence": "1.34"},
        "node_access": {"available": False, "evidence": "no node access"},
    }
    caps, reasons = _verdict(tests, known)
    assert caps["driver.taints"]["status"] == "pass" and "coverage" not in caps["driver.taints"] and reasons == []


def test_partial_baseline_undeclared_or_shape_capability_is_shown_not_held():
    """baseline (no pool of two slices on the reference driver), an undeclared driver capability, and
    driver.multiple_devices (matchAttribute without a grouping attribute on dra-example-driver) only show."""
    skip = "grouping attribute not available: no attribute groups devices; published (first devices): {}"
    tests = [
        _test("p", "passed", ["baseline", "driver.multiple_devices", "driver.taints"]),
        _test("s", "skipped", ["baseline", "driver.multiple_devices", "driver.taints"], skip),
    ]
    known = {
        "driver.multiple_devices": {"available": True, "declared": True, "evidence": "slices"},
        "driver.taints": {"available": True, "declared": False, "evidence": "not declared"},
    }
    caps, reasons = _verdict(tests, known)
    assert {n: c["status"] for n, c in caps.items()} == dict.fromkeys(caps, "partial") and reasons == []
    assert not any(coverage.holds_verdict(c) for c in caps.values())
    text = "\n".join(markdown.coverage_gaps({"capabilities": list(caps.values())}))
    assert text.count("(shown only)") == 3 and markdown.coverage_gaps({"capabilities": []}) == []


def test_a_failure_or_an_all_skipped_capability_is_not_partial():
    tests = [
        _test("f", "failed", ["driver.partitions"], "boom"),
        _test("s", "skipped", ["driver.partitions"], FIXTURE_SKIP),
    ]
    caps, _ = _verdict(tests, DECLARED)
    assert caps["driver.partitions"]["status"] == "fail"
    caps, reasons = _verdict(tests[1:], DECLARED)
    assert caps["driver.partitions"]["status"] == "skip" and reasons[0].startswith(
        "declared capability driver.partitions is skip"
    )


def test_default_on_taints_on_one_device_nodes_is_shown_not_held():
    """Review 6 finding 1: a one-GPU-per-node driver (taints on by default where the gate is on) skips the
    DeviceTaintRule tests, whose fixture needs two devices on a node; driver.taints and driver.cdi end partial,
    shown only: the inventory shape, not a driver defect."""
    skip = "two untainted devices on one node not available: one device per node; published (first devices): {}"
    tests = [
        _test("tolerations", "passed", ["driver.taints"]),
        _test("rule", "skipped", ["api.devicetaintrules", "driver.taints", "driver.cdi"], skip),
        _test("cdi", "passed", ["driver.cdi"]),
    ]
    known = {
        "driver.taints": {"available": True, "declared": True, "evidence": "held to it: gate on"},
        "driver.cdi": {"available": True, "declared": True, "evidence": "default on"},
        "api.devicetaintrules": {"available": True, "declared": False, "evidence": "served"},
    }
    caps, reasons = _verdict(tests, known)
    assert caps["driver.taints"]["status"] == "partial" and caps["driver.cdi"]["status"] == "partial"
    assert reasons == [] and not any(coverage.holds_verdict(c) for c in caps.values())
