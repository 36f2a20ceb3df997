"""Unit tests: RunConfig converters and the driver profile schema give clear errors; shipped profiles load."""

import dataclasses

import pytest
import yaml

from conformance.core import config, profile
from conformance.core.errors import ConfigError
from conformance.drivers import profiles

GOOD = {
    "name": "x",
    "driver": "gpu.example.com",
    "device_classes": ["gpu.example.com"],
    "visibility": {"env_regex": "^GPU_DEVICE_\\d+="},
    "deploy": {"mode": "preinstalled"},
}


def test_every_shipped_profile_is_valid():
    names = profiles.available()
    assert {
        "reference",
        "dra-example-driver",
        "k8s-test-driver",
        "nvidia-gpu",
        "nvidia-gpu-mock-nvml",
        "intel-gpu",
        "amd-gpu",
    } <= set(names)
    for name in names:
        assert profiles.load(name).driver


def test_unknown_driver_profile_lists_the_known_ones():
    with pytest.raises(ConfigError) as info:
        profiles.load("no-such-driver")
    assert "--driver" in str(info.value) and "reference" in str(info.value)


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"driver": "Not_A_Name"}, "driver"),
        ({"device_classes": []}, "device_classes"),
        ({"capabilities": {"shared_claims": "yes"}}, "capabilities.shared_claims"),
        ({"capabilities": {"teleport": True}}, "capabilities.teleport"),
        ({"attributes": {"model": "float"}}, "attributes.model"),
        ({"visibility": {"command": "env"}}, "visibility"),
        ({"deploy": {"mode": "ftp"}}, "deploy.mode"),
        ({"deploy": {"mode": "helm"}}, "deploy.chart"),
        ({"devices_per_node": 0}, "devices_per_node"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_profile_field_names_file_field_and_fix(patch, field):
    with pytest.raises(ConfigError) as info:
        profile.parse({**GOOD, **patch}, source="p.yaml")
    assert info.value.field == field and info.value.source == "p.yaml" and info.value.fix


@pytest.mark.parametrize(
    "deploy, key, mode",
    [
        ({"mode": "bundled", "chart": "oci://x"}, "chart", "helm"),
        ({"mode": "helm", "chart": "c", "binary": {"k8s": "x"}}, "binary", "host"),
        ({"mode": "preinstalled", "dir": "manifests/"}, "dir", "manifests"),
    ],
)
def test_deploy_key_of_another_mode_names_file_field_and_mode(deploy, key, mode):
    with pytest.raises(ConfigError) as info:
        profile.parse({**GOOD, "deploy": deploy}, source="p.yaml")
    assert info.value.source == "p.yaml" and info.value.field == f"deploy.{key}"
    assert mode in str(info.value) and f"deploy.mode: {mode}" in info.value.fix


def test_profile_file_with_bad_field_fails_through_loader(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "devices_per_node": "many"}))
    with pytest.raises(ConfigError) as info:
        profiles.load(str(path))
    assert str(path) in str(info.value) and "devices_per_node" in str(info.value)


def test_visibility_matches_and_reports_evidence():
    vis = profile.parse(GOOD).visibility
    ok, why = vis.matches("PATH=/bin\nGPU_DEVICE_0=gpu-0\n")
    assert ok and "GPU_DEVICE_0=" in why
    ok, why = vis.matches("PATH=/bin\n")
    assert not ok and "not found" in why


@pytest.mark.parametrize(
    "values, option",
    [
        ({"cluster": "Mini Kube"}, "--cluster"),
        ({"profile": "gold"}, "--profile"),
        ({"profile": "disruptive"}, "--profile"),
        ({"timeout_scale": "0"}, "--timeout-scale"),
        ({"timeout_scale": "fast"}, "--timeout-scale"),
        ({"nodes": "99"}, "--nodes"),
        ({"k8s_version": "1.99"}, "--k8s-version"),
        ({"feature_gates": "some"}, "--feature-gates"),
        ({"driver_deploy": "s/c/p"}, "--driver-deploy"),
        ({"cluster": "existing", "cluster_feature_gates": "DRAPrioritizedList"}, "--cluster-feature-gates"),
        ({"cluster": "existing", "cluster_feature_gates": "DRAPrioritizedList=yes"}, "--cluster-feature-gates"),
        ({"cluster": "local", "cluster_feature_gates": "DRAPrioritizedList=true"}, "--cluster-feature-gates"),
        ({"cluster": "local", "kind_name": "mine"}, "--kind-name"),
    ],
)
def test_bad_options_name_the_option(values, option):
    with pytest.raises(ConfigError) as info:
        config.from_options(values, known_versions=("1.34", "1.35"))
    assert info.value.source == option and info.value.fix


def test_good_options_are_converted_and_frozen():
    cfg = config.from_options(
        {
            "timeout_scale": "2",
            "nodes": "3",
            "k8s_version": "v1.35.4",
            "profile": "disruptive",
            "allow_disruptive": True,
        },
        known_versions=("1.35",),
    )
    assert (cfg.timeout_scale, cfg.nodes, cfg.k8s_version) == (2.0, 3, "1.35")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.nodes = 1


def test_cluster_feature_gates_are_parsed_for_existing_clusters():
    cfg = config.from_options(
        {"cluster": "existing", "cluster_feature_gates": "DRAAdminAccess=true, DRADeviceTaints=False"}
    )
    assert config.gate_list("--cluster-feature-gates", cfg.cluster_feature_gates) == {
        "DRAAdminAccess": True,
        "DRADeviceTaints": False,
    }


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_a_profile_that_is_not_utf8_is_bad_input_naming_the_file(tmp_path, encoding):
    """s16 new-user F2: a shipped profile (its header holds a non-ASCII character) saved by an editor as
    Latin-1 or UTF-16 was a UnicodeDecodeError traceback, not a ConfigError (exit 4)."""
    path = tmp_path / "x.yaml"
    path.write_text("# \u00a7 a header\nname: x\n", encoding=encoding)
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 0x[0-9a-f]{2} at offset \d+\)") as info:
        profiles.load(str(path))
    assert str(path) in str(info.value) and "(fix: save the file as UTF-8)" in str(info.value)
