"""Unit tests: release gaps bounded to patch releases (conformance.core.release_gaps.Until) - the kube-scheduler
panic on allocationMode All over devices consuming counters (kubernetes/kubernetes#138882) is a gap of
v1.35.0-v1.35.5 and v1.36.0-v1.36.1 only - and the fixture that skips the allocationMode All tests there."""

import pytest

from conformance import fixtures
from conformance.core import capabilities, profile, release_gaps
from conformance.dra.inventory import Device, Together

DRIVER = "gpu.example.com"
NAME = "allocator.all_mode_counters"


def _profile():
    raw = {"name": "p", "driver": DRIVER, "device_classes": [DRIVER], "visibility": {"env_regex": "x"}}
    return profile.parse(raw, source="p.yaml")


def _cap(version: str, gate: bool = True) -> capabilities.Capability:
    facts = {"feature_gates": {"DRAPartitionableDevices": gate}, "devices": [], "k8s_version": version}
    return capabilities.evaluate(facts, _profile()).items[NAME]


@pytest.mark.parametrize(
    "version,has_gap",
    [
        ("v1.34.4", False),  # reads counters from the slice: no pool to miss
        ("v1.35.0", True),
        ("v1.35.4", True),  # measured: the scheduler panicked (session 14)
        ("v1.35.5", True),
        ("v1.35.6-rc.0", True),  # a pre-release comes before its patch
        ("v1.35.6", False),  # #138989
        ("v1.35.6-gke.1200", False),  # a vendor build of the fixed patch
        ("v1.35.7", False),
        ("1.35", True),  # patch unknown: nothing assumed fixed
        ("v1.36.1", True),
        ("v1.36.2", False),  # #138988
        ("v1.36.3", False),
        ("v1.37.2", False),
    ],
)
def test_the_all_mode_panic_is_a_gap_of_the_patches_before_the_fix(version, has_gap):
    cap = _cap(version)
    assert cap.available is not has_gap, cap
    if has_gap:
        assert "#138882" in cap.evidence and version in cap.evidence and "fixed in v1.3" in cap.evidence, cap
    if version == "1.35":
        assert "patch release is not known" in cap.evidence, cap


def test_gap_of_keeps_whole_minor_entries_and_the_gate_comes_first():
    """A plain entry covers every patch of its minor (admin access to consumed counters: #140729, open, on
    v1.35.6 as on v1.35.4); with the gate off the capability names the gate, whatever the release."""
    gaps = release_gaps.KNOWN_ALLOCATOR_GAPS["allocator.admin_access_counters"]
    assert release_gaps.gap_of(gaps, "v1.35.6") == release_gaps.gap_of(gaps, "v1.35.4") == gaps["1.35"]
    assert release_gaps.gap_of({}, "v1.35.4") == ""
    off = _cap("v1.35.4", gate=False)
    assert off.available is False and "DRAPartitionableDevices" in off.evidence, off


class _Caps:
    def __init__(self, version):
        self.cap = _cap(version)

    def has(self, name):
        assert name == NAME
        return self.cap.available

    def evidence(self, name):
        return self.cap.evidence


def _together(consumes: bool) -> Together:
    counters = (("gpu-0-counters", "memory", "1Gi"),) if consumes else ()
    device = Device(node="n1", pool="n1", name="gpu-0-1g", attributes={}, capacity={}, consumes=counters)
    return Together(None, {"n1": [device]})


def test_allocation_mode_all_tests_skip_on_partitions_where_the_scheduler_would_panic():
    """On v1.35.4 a claim with allocationMode All over partitions would crash the cluster's kube-scheduler: the
    test skips with the gap's evidence; on v1.35.6, or over devices that consume no counters, it runs."""
    together_all = fixtures.together_all._get_wrapped_function()
    with pytest.raises(pytest.skip.Exception, match=r"allocator.all_mode_counters not available: .*#138882"):
        together_all(_together(consumes=True), _Caps("v1.35.4"))
    whole = _together(consumes=False)
    assert together_all(whole, _Caps("v1.35.4")) is whole
    fixed = _together(consumes=True)
    assert together_all(fixed, _Caps("v1.35.6")) is fixed
