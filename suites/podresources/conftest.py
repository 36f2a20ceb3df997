"""Fixtures for this area: the harness's (by name) plus the suite helpers of suites/_support."""
from suites._support.fixtures import admin_builder, grouping_attribute, inventory, probe  # noqa: F401
