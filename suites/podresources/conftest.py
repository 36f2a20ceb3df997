"""Fixtures for this area: the harness's (by name) plus the suite helpers of suites/_support."""
from suites._support.fixtures import (admin_builder, grouping_attribute, inventory, largest_capacity,  # noqa: F401
                                      numeric_attribute, probe, unique_attribute)
