"""Harness stand-in for the reporting tests (unit-test fake, never counted as the feature).

Registers the marker vocabulary and implements ``pytest_dra_collect_evidence`` with fixed pieces, as the
harness does with real objects, events and logs.
"""

from conformance.core import markers


def pytest_configure(config):
    for line in markers.ini_lines():
        config.addinivalue_line("markers", line)


def pytest_dra_collect_evidence(item, call):
    claim = f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: {item.name}\n"
    return [
        ("claim.yaml", claim, "application/yaml"),
        ("events.txt", f"Warning FailedPrepareDynamicResources ({call.when})\n", "text/plain"),
        ("driver-log.txt", b"E prepare: injected fault\n", "text/plain"),
    ]
