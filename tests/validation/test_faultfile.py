"""fixtures/faults.yaml validation: the shipped file, and each kind of bad entry named with its fix."""

from __future__ import annotations

import pytest
from conformance_tools.validation import faultfile
from conformance_tools.validation.faultfile import FaultFileError, expected_matches

SMOKE = "suites/smoke/test_smoke.py"
RUNS = f"{SMOKE}::test_pod_with_claim_runs_and_sees_its_device"
KNOWN = ("prepare-error", "no-slices")


def _entry(**over) -> dict:
    return {"class": "prepare fails", "symptom": "FailedPrepare", "select": [SMOKE], "expect": [RUNS], **over}


def _doc(**faults) -> dict:
    base = {"prepare-error": _entry(), "no-slices": _entry()}
    return {"version": 1, "faults": {**base, **faults}}


def _problems(data, known=KNOWN) -> list[str]:
    with pytest.raises(FaultFileError) as err:
        faultfile.parse(data, known, "faults.yaml")
    assert str(err.value).startswith("faults.yaml: "), str(err.value)
    return err.value.problems


def test_shipped_file_lists_every_fault_of_the_reference_driver():
    known = faultfile.known_faults()
    loaded = faultfile.load(faultfile.DEFAULT_PATH, known)
    assert list(loaded.entries) == [n for n in loaded.entries if n in known] and set(loaded.entries) == set(known)


def test_valid_entry_gets_defaults_and_options():
    data = _doc(**{"prepare-error": _entry(timeout_scale=0.2, run_args=["--nodes", "1"])})
    data["defaults"] = {"profile": "full", "timeout_scale": 0.5}
    loaded = faultfile.parse(data, KNOWN)
    first, second = loaded.entries["prepare-error"], loaded.entries["no-slices"]
    assert (first.profile, first.timeout_scale, first.run_args) == ("full", 0.2, ("--nodes", "1"))
    assert (second.profile, second.timeout_scale, second.expect) == ("full", 0.5, (RUNS,))
    assert first.run_key == ("full", ("--nodes", "1"), (), "") != second.run_key


def test_module_invariants_result_may_be_expected():
    data = _doc(**{"no-slices": _entry(expect=[f"{SMOKE}::invariants"])})
    assert faultfile.parse(data, KNOWN).entries["no-slices"].expect == (f"{SMOKE}::invariants",)


def test_unknown_fault_is_named_with_the_known_ones():
    (problem,) = _problems(_doc(**{"prepare-eror": _entry()}))
    assert problem.startswith("faults.prepare-eror: unknown fault") and "prepare-error" in problem


def test_fault_without_entry_is_named():
    data = _doc()
    del data["faults"]["no-slices"]
    (problem,) = _problems(data)
    assert "no entry for no-slices" in problem and "fix:" in problem


def test_unknown_keys_are_named_with_the_allowed_ones():
    data = _doc(**{"no-slices": _entry(expected=[RUNS])})
    data["defaults"] = {"profiel": "full"}
    problems = _problems(data)
    assert any(p.startswith("faults.no-slices: unknown key 'expected'") and "expect" in p for p in problems), problems
    assert any(p.startswith("defaults: unknown key 'profiel'") for p in problems), problems


def test_every_problem_is_reported_at_once():
    bad = _entry(select=["suites/nope.py"], expect=[f"{SMOKE}::test_missing"], profile="huge", timeout_scale=0)
    del bad["class"]
    problems = _problems(_doc(**{"no-slices": bad}))
    text = "\n".join(problems)
    for needle in ("missing 'class'", "no such file", "no test 'test_missing'", "profile: 'huge'", "timeout_scale: 0"):
        assert needle in text, problems


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"expect": ["suites/node/test_prepare.py::test_init_container_sees_the_claim"]}, "is not run by select"),
        ({"expect": [SMOKE]}, "is not a test"),
        ({"expect": []}, "empty"),
        ({"select": "suites/smoke"}, "expected a list of strings"),
        ({"select": ["tests/harness"]}, "is not under suites/"),
        ({"run_args": ["--report-dir", "x"]}, "set by validate-suite itself"),
        ({"class": "two\nlines"}, "one non-empty line"),
        ({"symptom": ""}, "symptom: missing or empty"),
        ({"symptom": "a(b"}, "is not a regex"),
        ({"symptom_class": "bad-luck"}, "symptom_class: 'bad-luck' (fix: one of driver-defect"),
        ({"expect": [{"test": RUNS, "symptom": "["}]}, "is not a regex"),
        ({"expect": [{"symptom": "x"}]}, "has no test"),
        ({"expect": [{"test": RUNS, "symptom": "x", "why": 1}]}, "unknown key 'why'"),
    ],
)
def test_bad_entry_is_refused_naming_the_field(over, needle):
    problems = _problems(_doc(**{"no-slices": _entry(**over)}))
    assert any(p.startswith("faults.no-slices") and needle in p for p in problems), problems


def test_wrong_version_and_shape_are_refused():
    assert any("version" in p for p in _problems({"faults": _doc()["faults"]}))
    assert _problems(["not", "a", "mapping"])[0].startswith("top level")


def test_pick_keeps_file_order_and_refuses_unknown_names():
    loaded = faultfile.parse(_doc(), KNOWN)
    assert [e.name for e in loaded.pick(["no-slices", "prepare-error"])] == ["prepare-error", "no-slices"]
    assert [e.name for e in loaded.pick([])] == list(KNOWN)
    with pytest.raises(faultfile.ConfigError, match="--faults.*pick from prepare-error, no-slices"):
        loaded.pick(["nope"])


@pytest.mark.parametrize(
    ("pattern", "nodeid", "hit"),
    [
        ("a.py::test_x", "a.py::test_x", True),
        ("a.py::test_x", "a.py::test_x[v1-pod]", True),
        ("a.py::test_x", "a.py::test_xy", False),
        ("a.py::test_x[v1]", "a.py::test_x[v2]", False),
        ("a.py::*", "a.py::test_x[v1]", True),
        ("a.py::test_?", "a.py::test_x", True),
        ("b.py::*", "a.py::test_x", False),
    ],
)
def test_expected_pattern_matching(pattern, nodeid, hit):
    assert expected_matches(pattern, nodeid) is hit


def test_symptom_per_expected_test_overrides_the_faults():
    other = f"{SMOKE}::test_driver_publishes_devices_on_every_node"
    raw = _entry(expect=[RUNS, {"test": other, "symptom": "no slices"}], symptom_class="driver-defect")
    entry = faultfile.parse(_doc(**{"no-slices": raw}), KNOWN, "f").entries["no-slices"]
    assert entry.expect == (RUNS, other) and entry.symptom_class == "driver-defect"
    assert (entry.symptom_for(RUNS), entry.symptom_for(other)) == ("FailedPrepare", "no slices")


def test_an_expected_failure_must_be_a_driver_defect_unless_the_entry_says_any():
    """s15 breaker C2: a fault of the driver blamed on the cluster or the suite misleads the driver's author, so the
    class is judged by default; ``symptom_class: any`` turns the check off for one entry."""
    entries = faultfile.parse(_doc(**{"prepare-error": _entry(symptom_class="any")}), KNOWN, "f").entries
    assert (entries["no-slices"].symptom_class, entries["prepare-error"].symptom_class) == ("driver-defect", "")
    other = faultfile.parse(_doc(**{"no-slices": _entry(symptom_class="infrastructure")}), KNOWN, "f").entries
    assert other["no-slices"].symptom_class == "infrastructure"


def test_a_fault_can_name_the_oldest_release_its_test_runs_on():
    """s16: toleration-seconds-refused's test skips on v1.34 (a release gap), so the default matrix missed it."""
    entries = faultfile.parse(_doc(**{"no-slices": _entry(min_k8s="1.35")}), KNOWN, "f").entries
    assert entries["no-slices"].min_k8s == "1.35" and entries["prepare-error"].min_k8s == ""
    assert entries["no-slices"].run_key != entries["prepare-error"].run_key  # a healthy run of its own
    problems = _problems(_doc(**{"no-slices": _entry(min_k8s=1.35)}))
    assert any("min_k8s: 1.35 (fix: a Kubernetes minor in quotes" in p for p in problems), problems
