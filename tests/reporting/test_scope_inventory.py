"""Unit test (breaker finding 7): a driver that publishes one device per node leaves ``driver.multiple_devices``
unavailable, so the multi-claim and concurrency tests skip; the scope box must say so ("not testable here")
rather than show the capability in no row. Capabilities come from :func:`conformance.core.capabilities.evaluate`
over the shipped reference profile with the key left out, the box from :func:`conformance.reporting.scope.box`."""

from __future__ import annotations

import pathlib

import yaml

from conformance.core import capabilities, profile
from conformance.reporting import scope

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "drivers" / "reference.yaml"


def _box(devices_per_node: int) -> dict[str, list[str]]:
    raw = yaml.safe_load(REFERENCE.read_text())
    raw["capabilities"].pop("multiple_devices")
    facts = {
        "served_versions": {"v1": []},
        "feature_gates": {},
        "devices": [{"node": n, "pool": n, "device": f"gpu-{i}"} for n in ("a", "b") for i in range(devices_per_node)],
        "k8s_version": "v1.34.4",
        "node_access": (True, "local cluster"),
    }
    caps = capabilities.evaluate(facts, profile.parse(raw, source="reference-copy.yaml"))
    entries = [
        {"name": c.name, "status": "pass" if c.available else "skip", "evidence": c.evidence}
        for c in caps.items.values()
    ]
    return dict(scope.box({"capabilities": entries}))


def test_one_device_per_node_shows_multiple_devices_as_not_testable_here():
    """Given one device per node, when the box is drawn, then driver.multiple_devices is 'not testable here'
    with the reason; with two devices per node it is not in that row."""
    row = _box(1)["Not testable on this cluster"]
    assert "driver.multiple_devices (not testable here: driver publishes < 2 devices per node)" in row, row
    assert not any(r.startswith("driver.multiple_devices") for r in _box(2)["Not testable on this cluster"])


def test_a_kubernetes_gap_no_release_fixes_does_not_suggest_a_newer_version():
    """allocator.admin_access_counters (kubernetes/kubernetes#140729, open): the scope box names the upstream issue
    instead of "a newer --k8s-version"; a gap a later release fixes keeps that advice."""
    from conformance.core.release_gaps import KNOWN_ALLOCATOR_GAPS  # noqa: PLC0415

    open_gap = f"Kubernetes v1.34.4: {KNOWN_ALLOCATOR_GAPS['allocator.admin_access_counters']['1.34']}"
    fixed = f"Kubernetes v1.34.4: {KNOWN_ALLOCATOR_GAPS['allocator.result_tolerations']['1.34']}"
    entries = [
        {"name": name, "status": "skip", "evidence": evidence, "clusterLacks": True}
        for name, evidence in (("allocator.admin_access_counters", open_gap), ("allocator.result_tolerations", fixed))
    ]
    rows = dict(scope.box({"capabilities": entries}))["Not testable on this cluster"]
    assert rows[0].startswith("allocator.admin_access_counters (Kubernetes gap no release fixes yet: "), rows
    assert rows[0].endswith("kubernetes/kubernetes#140729, open)") and "newer" not in rows[0], rows
    assert rows[1].endswith(": a newer --k8s-version)"), rows
