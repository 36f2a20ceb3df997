"""Suite fixtures the harness plugin does not offer yet; area conftests import them by name.

``probe`` (:class:`~suites._support.probe.Probe`), ``inventory`` (the driver's published devices),
``admin_builder`` (a Builder bound to the admin-access namespace), ``pod_resources`` (a PodResources client
factory per node).
Belongs in: conformance/plugin.py.
"""
from __future__ import annotations

import dataclasses

import pytest

from conformance.k8s.builders.builder import Builder

from .inventory import Inventory
from .probe import Probe


@pytest.fixture
def probe(request, k8s, profile):
    """A :class:`Probe` for this run (node log fallback when the cluster offers node access)."""
    try:
        node_access = request.getfixturevalue("node_access")
    except pytest.skip.Exception:
        node_access = None
    return Probe(k8s, profile, node_access)


@pytest.fixture
def inventory(k8s, driver):
    """The driver's published devices right now (:class:`~suites._support.inventory.Inventory`)."""
    return Inventory.read(k8s, driver.name)


@pytest.fixture
def admin_builder(builder, admin_namespace):
    """A Builder like ``builder`` but for the namespace labelled ``resource.kubernetes.io/admin-access``."""
    return Builder(dataclasses.replace(builder.ctx, namespace=admin_namespace))


@pytest.fixture
def grouping_attribute(inventory):
    """A string/int attribute some devices of a node share while others differ (for matchAttribute and
    distinctAttribute tests). Skips, before the test body and with the published attributes as evidence,
    when the driver publishes none: the constraint cannot be shown to be enforced with such an inventory.
    Belongs in: conformance/core/capabilities.py (a ``driver.grouping_attribute`` capability from the slices)."""
    try:
        return inventory.grouping_attribute()
    except LookupError as exc:
        sample = {d.name: d.attributes for d in inventory.devices[:3]}
        pytest.skip(f"grouping attribute not available: {exc}; published attributes (first devices): {sample}")


def _inventory_skip(inventory, what: str, exc: Exception):
    sample = {d.name: {"attributes": d.attributes, "capacity": d.capacity} for d in inventory.devices[:2]}
    pytest.skip(f"{what} not available: {exc}; published (first devices): {sample}")


@pytest.fixture
def numeric_attribute(inventory):
    """An int attribute every device publishes (CEL selector tests); skips with evidence when none."""
    try:
        return inventory.numeric_attribute()
    except LookupError as exc:
        _inventory_skip(inventory, "int attribute", exc)


@pytest.fixture
def unique_attribute(inventory):
    """An attribute with a different value on every device of a node; skips with evidence when none."""
    try:
        return inventory.distinct_attribute()
    except LookupError as exc:
        _inventory_skip(inventory, "per-device unique attribute", exc)


@pytest.fixture
def largest_capacity(inventory):
    """``(capacity name, largest published value)`` of a capacity every device publishes; skips when none."""
    try:
        return inventory.largest_capacity()
    except LookupError as exc:
        _inventory_skip(inventory, "capacity", exc)
