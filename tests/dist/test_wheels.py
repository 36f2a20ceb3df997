"""The plugin wheel is the product a vendor installs: it carries the suites, the driver profiles, the gRPC
stubs and the reference driver's chart, and none of the lab's cluster, toolchain or image code (issue 23
acceptance: "a test over the wheel's file list"). The lab and the tools plug in through entry points only."""

from __future__ import annotations

import configparser
import re
import zipfile

import pytest

from tests.dist import wheels

LAB_CODE = re.compile(r"(^|/)(toolchain|kindnode|kind|local|bench|validation)(/|\.py$)|conformance_(lab|tools)/")


@pytest.fixture(scope="module")
def built():
    return wheels.build()


def _names(path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def _entry_points(path) -> configparser.ConfigParser:
    with zipfile.ZipFile(path) as z:
        text = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
    parser = configparser.ConfigParser()
    parser.read_string(text)
    return parser


def test_the_plugin_wheel_ships_suites_profiles_stubs_and_chart_but_no_lab_code(built):
    names = _names(built["dra_conformance"])
    for wanted in (
        "conformance/suites/conftest.py",
        "conformance/suites/smoke/test_smoke.py",
        "conformance/profiles/reference.yaml",
        "conformance/profiles/dra-example-driver.yaml",
        "conformance/node/draplugin_v1_pb2.py",
        "reference_driver/deploy/chart/Chart.yaml",
        "reference_driver/deploy/chart/templates/daemonset.yaml",
        "conformance/reporting/allure/package-lock.json",
        "conformance/toolbox.py",
    ):
        assert wanted in names, f"{wanted} missing from the plugin wheel"
    lab_code = [n for n in names if LAB_CODE.search(n) and not n.startswith("conformance/suites/")]
    assert lab_code == [], f"lab or tools code in the plugin wheel: {lab_code}"
    assert not any(n.endswith("versions.toml") for n in names), "the toolchain pins belong to the lab"


def test_the_lab_and_the_tools_plug_in_through_the_vendor_entry_points(built):
    plugin = _entry_points(built["dra_conformance"])
    assert dict(plugin["pytest11"]) == {
        "dra_conformance": "conformance.plugin",
        "dra_conformance_reporting": "conformance.reporting.plugin",
    }
    assert set(plugin["dra_conformance.commands"]) == {"run", "report", "preflight", "cleanup", "profile", "images"}
    assert "dra_conformance.cluster_providers" not in plugin, "the plugin registers existing through its hook"
    lab = _entry_points(built["dra_conformance_lab"])
    assert dict(lab["dra_conformance.cluster_providers"]) == {
        "local": "conformance_lab.providers:local",
        "kind": "conformance_lab.providers:kind",
    }
    assert set(lab["dra_conformance.locators"]) == {"lab"} and set(lab["dra_conformance.commands"]) == {"lab"}
    assert all(n.startswith(("conformance_lab/", "dra_conformance_lab-")) for n in _names(built["dra_conformance_lab"]))
    tools = _entry_points(built["dra_conformance_tools"])
    assert set(tools["dra_conformance.commands"]) == {"tools"}
    assert all(
        n.startswith(("conformance_tools/", "dra_conformance_tools-")) for n in _names(built["dra_conformance_tools"])
    )
