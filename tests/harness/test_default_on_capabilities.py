"""Unit tests: ``driver.taints`` is on by default wherever the cluster serves DeviceTaintRules with DRADeviceTaints
on (review 5 finding 6), ``taints: false`` is a waiver summary.md shows, and ``driver.extended_resource_name`` is
available only when the profile names one (finding 7)."""

from conformance.core import capabilities, profile, selection
from conformance.drivers import profiles
from conformance.reporting import markdown

DRIVER = "gpu.example.com"
_RAW = {"name": "p", "driver": DRIVER, "device_classes": [DRIVER], "visibility": {"env_regex": "x"}}


def _profile(ext: str = "", **caps) -> profile.DriverProfile:
    return profile.parse({**_RAW, "capabilities": {**caps, "extended_resource_name": ext}}, source="p.yaml")


def _facts(gate=True, served=True, error=""):
    gates = {} if gate is None else {"DRADeviceTaints": gate, "DRAExtendedResource": gate}
    return {
        "served_versions": {"v1": [], **({"v1alpha3": ["devicetaintrules"]} if served else {})},
        "feature_gates": gates,
        "feature_gates_error": error,
        "devices": [{"node": "a", "pool": "a", "device": f"d{i}"} for i in range(2)],
        "k8s_version": "v1.34.4",
    }


def test_taints_left_out_of_the_profile_are_held_where_the_cluster_serves_rules():
    """Given a profile silent about taints, when the DRADeviceTaints gate is on, then driver.taints is available
    and held as declared and the DeviceTaintRule tests run where DeviceTaintRules are served; with the gate off it
    is unavailable and not held; an unreadable gate does not excuse it."""
    caps = capabilities.evaluate(_facts(), _profile())
    cap = caps.items["driver.taints"]
    assert cap.available and cap.declared and "DRADeviceTaints} = 1" in cap.evidence, cap
    assert selection.decide(["full"], ["api.devicetaintrules", "driver.taints"], "full", caps).action == "run"
    cap = capabilities.evaluate(_facts(gate=False), _profile()).items["driver.taints"]
    assert not cap.available and not cap.declared and "the cluster lacks it" in cap.evidence, cap
    unserved = capabilities.evaluate(_facts(served=False), _profile())  # the rule tests skip, blaming the API
    decision = selection.decide(["full"], ["api.devicetaintrules", "driver.taints"], "full", unserved)
    assert decision.action == "skip" and decision.reason.startswith("api.devicetaintrules not available")
    unknown = capabilities.evaluate(_facts(gate=None, error="403"), _profile()).items["driver.taints"]
    assert unknown.available and unknown.declared, unknown


def test_taints_declared_true_keep_the_declared_path():
    """A profile declaring taints: true is judged as before: excused (cluster_lacks) when the gate is off."""
    on = capabilities.evaluate(_facts(), _profile(taints=True)).items["driver.taints"]
    assert on.available and on.declared and "declares taints: true" in on.evidence
    off = capabilities.evaluate(_facts(gate=False), _profile(taints=True)).items["driver.taints"]
    assert not off.available and off.cluster_lacks and off.declared


def test_taints_false_is_a_waiver_shown_in_summary_md():
    """``taints: false`` makes the taint tests skip with the opt-out as evidence, which summary.md lists as a
    profile waiver."""
    caps = capabilities.evaluate(_facts(), _profile(taints=False))
    cap = caps.items["driver.taints"]
    assert not cap.available and not cap.declared and "declares taints: false" in cap.evidence
    assert selection.decide(["full"], ["driver.taints"], "full", caps).action == "skip"
    assert markdown.WAIVER.search(cap.evidence)


def test_extended_resource_name_is_available_only_when_the_profile_names_one():
    """No name: unavailable with the profile as evidence; a name: available and declared, excused only when the
    cluster has DRAExtendedResource known off."""
    none = capabilities.evaluate(_facts(), _profile()).items["driver.extended_resource_name"]
    assert not none.available and not none.declared and "names no extended_resource_name" in none.evidence
    named = capabilities.evaluate(_facts(), _profile("example.com/gpu")).items["driver.extended_resource_name"]
    assert named.available and named.declared and "example.com/gpu" in named.evidence
    off = capabilities.evaluate(_facts(gate=False), _profile("example.com/gpu")).items["driver.extended_resource_name"]
    assert not off.available and off.cluster_lacks and off.declared


def test_shipped_profiles_select_the_taint_tests_as_before():
    """The dra-example-driver profile (taints left out now) and the reference profile (taints: true) run, skip or
    excuse the taint tests exactly as the reference profile's declaration did, with the gate on or off."""
    shipped = {n: profiles.load(n) for n in ("dra-example-driver", "reference")}
    before = _profile(taints=True)
    for facts in (_facts(), _facts(gate=False), _facts(served=False)):
        want = capabilities.evaluate(facts, before)
        for name, prof in shipped.items():
            got = capabilities.evaluate(facts, prof)
            for needs in (["api.devicetaintrules", "driver.taints"], ["driver.taints"]):
                decision = selection.decide(["full"], needs, "full", got).action
                assert decision == selection.decide(["full"], needs, "full", want).action, (name, needs, facts)
            assert got.items["driver.taints"].available == want.items["driver.taints"].available, name
