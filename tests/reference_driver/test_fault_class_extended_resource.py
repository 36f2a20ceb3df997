"""Fault ``class-without-extended-resource``: both deploys of the reference driver (the chart with its ``faults``
value, the bundled host deploy with the run's ``DRA_REFERENCE_FAULTS``) create its DeviceClass without
``spec.extendedResourceName``; without the fault both map the profile's extended_resource_name (KEP-5004)."""

from __future__ import annotations

from pathlib import Path

import yaml

from reference_driver import DRIVER_NAME
from reference_driver.faults import FAULTS, Faults
from tests.reference_driver.test_chart import render

FAULT = "class-without-extended-resource"
DEPLOY = Path(__file__).resolve().parents[2] / "reference_driver" / "deploy"
PROFILE = Path(__file__).resolve().parents[2] / "fixtures" / "drivers" / "reference.yaml"


def _chart_class(*extra: str) -> dict:
    return next(o for o in render(*extra) if o["kind"] == "DeviceClass" and o["metadata"]["name"] == DRIVER_NAME)


def test_the_fault_is_registered():
    assert FAULT in FAULTS and Faults.parse(FAULT).on(FAULT)


def test_chart_class_maps_the_profiles_extended_resource_unless_the_fault_is_on():
    wanted = yaml.safe_load(PROFILE.read_text())["capabilities"]["extended_resource_name"]
    assert _chart_class()["spec"]["extendedResourceName"] == wanted
    faulty = _chart_class("--set-string", f"faults=prepare-error\\,{FAULT}")
    assert "extendedResourceName" not in faulty["spec"] and faulty["spec"]["selectors"]


def test_bundled_class_drops_the_field_only_with_the_fault():
    from conformance.drivers.host import bundled_class  # test-side only: the driver never imports conformance

    wanted = yaml.safe_load(PROFILE.read_text())["capabilities"]["extended_resource_name"]
    doc = yaml.safe_load((DEPLOY / "deviceclass.yaml").read_text())
    assert bundled_class(dict(doc, spec=dict(doc["spec"])), "")["spec"]["extendedResourceName"] == wanted
    faulty = bundled_class(dict(doc, spec=dict(doc["spec"])), f"skip-cdi-env, {FAULT}")
    assert "extendedResourceName" not in faulty["spec"] and faulty["spec"]["selectors"]
