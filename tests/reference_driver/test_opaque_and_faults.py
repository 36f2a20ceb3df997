"""GpuConfig validation and the fault registry."""

from __future__ import annotations

import pytest

from reference_driver import opaque
from reference_driver.faults import FAULTS, Faults, UnknownFaultError
from tests.reference_driver.helpers import gpu_config


def test_gpu_config_valid_parses_sharing_and_env():
    """A valid GpuConfig yields its strategy, interval and env."""
    cfg = opaque.parse(
        gpu_config(
            None,
            sharing={"strategy": "TimeSlicing", "timeSlicing": {"interval": "Short"}},
            env={"FOO": "bar", "ON": True},
        )
    )
    assert cfg.sharing == opaque.Sharing("TimeSlicing", "Short", None)
    assert dict(cfg.env) == {"FOO": "bar", "ON": "true"}


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"apiVersion": "other/v1", "kind": "GpuConfig"}, "unknown apiVersion 'other/v1'"),
        (gpu_config(None) | {"kind": "TpuConfig"}, "unknown kind 'TpuConfig'"),
        (gpu_config("TimeSlicing", colour="red"), "unknown field(s) ['colour']"),
        (gpu_config(None, sharing={"strategy": "Magic"}), "unknown value 'Magic'"),
        (
            gpu_config(None, sharing={"strategy": "Exclusive", "timeSlicing": {}}),
            "only allowed with strategy TimeSlicing",
        ),
        (
            gpu_config(None, sharing={"strategy": "SpacePartitioning", "spacePartitioning": {"partitionCount": 9}}),
            "partitionCount: 9",
        ),
        (gpu_config(None, env={"DRA_X": "1"}), "reserved prefix DRA_"),
        (gpu_config(None, env={"1BAD": "1"}), "'1BAD' is not a valid env var name"),
        ("not an object", "expected a JSON object"),
    ],
)
def test_gpu_config_invalid_names_the_bad_input(params, fragment):
    """Unknown kind/field/value is an error that names it."""
    with pytest.raises(opaque.ConfigError) as info:
        opaque.parse(params)
    assert fragment in str(info.value)


def test_gpu_config_merge_later_wins():
    """Later sharing replaces earlier; env merged by name, later wins."""
    a = opaque.parse(gpu_config("Exclusive", env={"A": "1", "B": "1"}))
    b = opaque.parse(gpu_config("TimeSlicing", env={"B": "2"}))
    merged = a.merged(b)
    assert merged.sharing.strategy == "TimeSlicing"
    assert dict(merged.env) == {"A": "1", "B": "2"}
    assert a.merged(opaque.parse(gpu_config(None))).sharing.strategy == "Exclusive"


def test_faults_parse_flag_and_env_and_reject_unknown():
    """Flag and env lists are merged; an unknown name lists the known ones."""
    faults = Faults.parse("prepare-error, no-slices", "skip-cdi-env")
    assert faults.enabled == {"prepare-error", "no-slices", "skip-cdi-env"}
    assert faults.on("prepare-error") and not faults.on("unprepare-error")
    with pytest.raises(UnknownFaultError, match="prepare-eror.*known faults"):
        Faults.parse("prepare-eror")
    assert Faults.parse("", None).enabled == frozenset()


def test_every_fault_is_documented():
    """The registry documents each fault in one sentence or more."""
    assert len(FAULTS) >= 6
    assert all(len(doc) > 30 for doc in FAULTS.values())
